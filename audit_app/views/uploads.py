"""Upload pages: the form, the detail page with live progress, the raw file, delete (after a
confirmation page), and the decision whether a billing upload restates another."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views import View
from django.views.generic import TemplateView

from audit_app.access.permissions import (
    ALL_ROLES,
    SUPERSESSION_ROLES,
    UPLOADER_ROLES,
    RoleRequiredMixin,
    has_role,
    method_roles,
    upload_delete_refusal,
)
from audit_app.costs.bills import upload_billing
from audit_app.forms import UploadForm
from audit_app.ingestion.live.selectors import stream_batches
from audit_app.ingestion.selectors import upload_contribution
from audit_app.ingestion.supersession import supersession_keep_both, supersession_mark
from audit_app.ingestion.uploads import (
    DuplicateUpload,
    StorageFull,
    UploadInUse,
    UploadRefused,
    too_large_message,
    upload_create,
    upload_delete,
    upload_delete_conflict,
)
from audit_app.lib.errors import DomainError
from audit_app.lib.upload_handlers import upload_too_large
from audit_app.models import Upload


class UploadCreateView(RoleRequiredMixin, View):
    roles_by_method = {"*": UPLOADER_ROLES}
    template_name = "audit/upload_new.html"

    def get(self, request: HttpRequest) -> HttpResponse:
        return self._render(request, UploadForm())

    def post(self, request: HttpRequest) -> HttpResponse:
        form = UploadForm(request.POST, request.FILES)
        if upload_too_large(request):
            form.add_error("file", too_large_message(settings.UPLOAD_MAX_BYTES))
            return self._render(request, form, status=413)
        if not form.is_valid():
            return self._render(request, form, status=400)
        file = form.cleaned_data["file"]
        try:
            upload = upload_create(
                source=file,
                original_name=file.name,
                kind=form.cleaned_data["kind"],
                requested_format=form.cleaned_data["format"],
                user=request.user,
            )
        except DuplicateUpload as exc:
            form.add_error("file", str(exc))
            return self._render(request, form, status=409, first=exc.first)
        except UploadRefused as exc:
            form.add_error(exc.field if exc.field in form.fields else None, str(exc))
            return self._render(request, form, status=400)
        except StorageFull as exc:
            form.add_error(None, str(exc))
            return self._render(request, form, status=507)
        if upload.error:  # stored, but the task broker could not take it yet
            messages.warning(request, f"Uploaded {upload.original_name}. {upload.error}")
        else:
            messages.success(request, f"Uploaded {upload.original_name}; ingesting it now.")
        return HttpResponseRedirect(reverse("upload-detail", args=[upload.pk]))

    def _render(
        self,
        request: HttpRequest,
        form: UploadForm,
        *,
        status: int = 200,
        first: Upload | None = None,
    ) -> HttpResponse:
        context = {"form": form, "first": first, "max_bytes": settings.UPLOAD_MAX_BYTES}
        return render(request, self.template_name, context, status=status)


class UploadDetailView(RoleRequiredMixin, TemplateView):
    template_name = "audit/upload_detail.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        upload = get_object_or_404(
            Upload.objects.select_related("uploaded_by"), pk=kwargs["upload_id"]
        )
        context["upload"] = upload
        context["can_delete"] = upload_delete_refusal(user=self.request.user, upload=upload) is None
        conflict = upload_delete_conflict(upload=upload) if context["can_delete"] else None
        context["delete_conflict"] = str(conflict or "")
        context["finished"] = upload.status in (Upload.Status.SUCCEEDED, Upload.Status.FAILED)
        context["billing"] = (
            upload_billing(upload)
            if upload.kind == Upload.Kind.BILLING and upload.status == Upload.Status.SUCCEEDED
            else None
        )
        context["stream"] = stream_batches(upload=upload)
        context["can_decide_restatement"] = has_role(
            self.request.user, method_roles(UploadRestatementView, "POST")
        )
        context["status_labels"] = dict(Upload.Status.choices)  # for the progress poll
        return context


class UploadRestatementView(RoleRequiredMixin, View):
    """POST from a billing upload's page: this upload supersedes the other (`supersedes`), the
    other supersedes this one (`superseded`), or both count (`keep_both`)."""

    roles_by_method = {"POST": SUPERSESSION_ROLES}
    DECISIONS = ("supersedes", "superseded", "keep_both")

    def post(self, request: HttpRequest, upload_id: int) -> HttpResponse:
        upload = get_object_or_404(Upload, pk=upload_id)
        back = HttpResponseRedirect(reverse("upload-detail", args=[upload.pk]))
        decision = request.POST.get("decision", "")
        other_id = request.POST.get("other", "")
        other = Upload.objects.filter(pk=int(other_id)).first() if other_id.isdigit() else None
        if decision not in self.DECISIONS or other is None:
            messages.error(request, "Choose one of the buttons for another billing upload.")
            return back
        try:
            if decision == "supersedes":
                supersession_mark(superseding=upload, superseded=other, user=request.user)
                done = f"Upload {upload.pk} now supersedes upload {other.pk}"
            elif decision == "superseded":
                supersession_mark(superseding=other, superseded=upload, user=request.user)
                done = f"Upload {other.pk} now supersedes upload {upload.pk}"
            else:
                supersession_keep_both(upload=upload, other=other, user=request.user)
                done = f"Uploads {upload.pk} and {other.pk} both count"
        except DomainError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"{done} for the billing periods they share.")
        return back


class UploadRawView(RoleRequiredMixin, View):
    """The file exactly as it was uploaded; 404 for a live stream's upload, which has none."""

    def get(self, request: HttpRequest, upload_id: int) -> FileResponse:
        upload = get_object_or_404(Upload, pk=upload_id)
        if not upload.file:
            raise Http404(
                f"Upload {upload.pk} ({upload.original_name}) is a live stream: its records "
                "arrived over the network, so there is no file to download."
            )
        return FileResponse(
            upload.file.open("rb"), as_attachment=True, filename=upload.original_name
        )


class UploadDeleteView(RoleRequiredMixin, View):
    """GET: what deleting the upload removes, with a Delete button (a POST) and Cancel. Who may
    is `upload_delete_refusal`, so a refusal names the rule."""

    template_name = "audit/upload_delete.html"
    # Every role reaches the page; `upload_delete_refusal` decides per upload.
    roles_by_method = {"GET": ALL_ROLES, "POST": ALL_ROLES}

    def get(self, request: HttpRequest, upload_id: int) -> HttpResponse:
        upload = _deletable_upload(request, upload_id)
        conflict = upload_delete_conflict(upload=upload)
        return self._render(request, upload, conflict=str(conflict or ""))

    def post(self, request: HttpRequest, upload_id: int) -> HttpResponse:
        upload = _deletable_upload(request, upload_id)
        name = upload.original_name
        try:
            upload_delete(upload=upload, user=request.user)
        except UploadInUse as exc:
            return self._render(request, upload, conflict=str(exc), status=409)
        messages.success(request, f"Deleted upload {upload_id} ({name}) and everything it added.")
        return HttpResponseRedirect(reverse("uploads"))

    def _render(
        self, request: HttpRequest, upload: Upload, *, conflict: str, status: int = 200
    ) -> HttpResponse:
        """The confirmation page; with a conflict it says why instead of offering the button."""
        context = {
            "upload": upload,
            "contribution": upload_contribution(upload=upload),
            "conflict": conflict,
        }
        return render(request, self.template_name, context, status=status)


def _deletable_upload(request: HttpRequest, upload_id: int) -> Upload:
    upload = get_object_or_404(Upload.objects.select_related("uploaded_by"), pk=upload_id)
    refusal = upload_delete_refusal(user=request.user, upload=upload)
    if refusal is not None:
        raise PermissionDenied(refusal)
    return upload
