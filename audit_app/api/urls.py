from __future__ import annotations

from django.urls import path

from audit_app.api import billing, spend, uploads, views

urlpatterns = [
    path("", views.ApiRootApi.as_view(), name="api-root"),
    path("me/", views.MeApi.as_view(), name="api-me"),
    path("spend/", spend.SpendApi.as_view(), name="api-spend"),
    path("workloads/", spend.WorkloadListApi.as_view(), name="api-workloads"),
    path(
        "workloads/<int:workload_id>/",
        spend.WorkloadDetailApi.as_view(),
        name="api-workload-detail",
    ),
    path("reconciliation/", billing.ReconciliationApi.as_view(), name="api-reconciliation"),
    path("pools/", billing.PoolListApi.as_view(), name="api-pools"),
    path("uploads/", uploads.UploadListCreateApi.as_view(), name="api-uploads"),
    path("uploads/<int:upload_id>/", uploads.UploadDetailApi.as_view(), name="api-upload-detail"),
]
