"""factory_boy factories for model data."""

from __future__ import annotations

import hashlib
from typing import Any

import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.files.base import ContentFile

from audit_app.models import Upload

TEST_PASSWORD = "correct horse battery staple"


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.com")
    password = factory.PostGenerationMethodCall("set_password", TEST_PASSWORD)

    @factory.post_generation
    def roles(self, create: bool, extracted: list[str] | None, **kwargs: Any) -> None:
        if create and extracted:
            for name in extracted:
                self.groups.add(Group.objects.get_or_create(name=name)[0])
        if create:
            self.save()


class UploadFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Upload

    kind = Upload.Kind.TOKEN_LOG
    format = "generic"
    status = Upload.Status.SUCCEEDED
    original_name = factory.Sequence(lambda n: f"requests-{n}.csv")
    sha256 = factory.LazyAttribute(lambda o: hashlib.sha256(o.content).hexdigest())
    size_bytes = factory.LazyAttribute(lambda o: len(o.content))
    file = factory.LazyAttribute(lambda o: ContentFile(o.content, name=o.original_name))

    class Params:
        content = factory.Sequence(lambda n: f"started_at,model\n# file {n}\n".encode())

    @classmethod
    def _create(cls, model_class: type[Upload], *args: Any, **kwargs: Any) -> Upload:
        created_at = kwargs.pop("created_at", None)
        upload = super()._create(model_class, *args, **kwargs)
        if created_at is not None:
            # auto_now_add ignores a value passed on create; tests need uploads on given days.
            model_class.objects.filter(pk=upload.pk).update(created_at=created_at)
            upload.refresh_from_db()
        return upload
