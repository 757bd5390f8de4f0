from __future__ import annotations

from django.urls import path

from audit_app.api import (
    alerts,
    audit,
    billing,
    bills,
    budgets,
    live,
    otlp,
    recommendations,
    sources,
    spend,
    statements,
    uploads,
    views,
)

urlpatterns = [
    path("", views.ApiRootApi.as_view(), name="api-root"),
    path("me/", views.MeApi.as_view(), name="api-me"),
    path("spend/", spend.SpendApi.as_view(), name="api-spend"),
    path("workloads/", spend.WorkloadListApi.as_view(), name="api-workloads"),
    path(
        "workloads/<int:workload_id>/",
        recommendations.WorkloadApi.as_view(),
        name="api-workload-detail",
    ),
    path(
        "recommendations/",
        recommendations.RecommendationListApi.as_view(),
        name="api-recommendations",
    ),
    path(
        "recommendations/<int:recommendation_id>/",
        recommendations.RecommendationDetailApi.as_view(),
        name="api-recommendation-detail",
    ),
    path(
        "recommendations/<int:recommendation_id>/decision/",
        recommendations.RecommendationDecisionApi.as_view(),
        name="api-recommendation-decision",
    ),
    path("plan/", recommendations.PlanApi.as_view(), name="api-plan"),
    path("anomalies/", alerts.AnomalyListApi.as_view(), name="api-anomalies"),
    path("alerts/", alerts.AlertListApi.as_view(), name="api-alerts"),
    path(
        "alerts/<int:alert_id>/acknowledge/",
        alerts.AlertAcknowledgeApi.as_view(),
        name="api-alert-acknowledge",
    ),
    path("audit-events/", audit.AuditEventListApi.as_view(), name="api-audit-events"),
    path("reconciliation/", billing.ReconciliationApi.as_view(), name="api-reconciliation"),
    path("pools/", billing.PoolListApi.as_view(), name="api-pools"),
    path("bills/", bills.BillsApi.as_view(), name="api-bills"),
    path("uploads/", uploads.UploadListCreateApi.as_view(), name="api-uploads"),
    path("uploads/<int:upload_id>/", uploads.UploadDetailApi.as_view(), name="api-upload-detail"),
    path(
        "uploads/<int:upload_id>/supersede/",
        uploads.UploadSupersedeApi.as_view(),
        name="api-upload-supersede",
    ),
    path(
        "uploads/<int:upload_id>/keep-both/",
        uploads.UploadKeepBothApi.as_view(),
        name="api-upload-keep-both",
    ),
    path("budgets/", budgets.BudgetListCreateApi.as_view(), name="api-budgets"),
    path("budgets/<int:budget_id>/", budgets.BudgetDetailApi.as_view(), name="api-budget-detail"),
    path("statements/", statements.StatementApi.as_view(), name="api-statements"),
    path(
        "statements/policy/", statements.StatementPolicyApi.as_view(), name="api-statements-policy"
    ),
    path("sources/", sources.SourceListCreateApi.as_view(), name="api-sources"),
    path("sources/<int:source_id>/", sources.SourceDetailApi.as_view(), name="api-source-detail"),
    path("sources/<int:source_id>/poll/", sources.SourcePollApi.as_view(), name="api-source-poll"),
    path("ingest/litellm/", live.LitellmIngestApi.as_view(), name="api-ingest-litellm"),
    path("otlp/v1/traces", otlp.OtlpTracesApi.as_view(), name="api-otlp-traces"),
]
