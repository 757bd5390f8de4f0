from __future__ import annotations

from django.urls import path

from audit_app.views import (
    alerts,
    audit,
    billing,
    budgets,
    pages,
    recommendations,
    sources,
    statements,
    tokens,
    uploads,
)

urlpatterns = [
    path("", pages.OverviewView.as_view(), name="overview"),
    path("audit/", audit.AuditTrailView.as_view(), name="audit-trail"),
    path("tokens/", tokens.ApiTokenListView.as_view(), name="api-tokens"),
    path(
        "tokens/<int:token_id>/revoke/",
        tokens.ApiTokenRevokeView.as_view(),
        name="api-token-revoke",
    ),
    path("spend.csv", pages.SpendCsvView.as_view(), name="spend-csv"),
    path("workloads/", pages.WorkloadListView.as_view(), name="workloads"),
    path(
        "workloads/<int:workload_id>/", pages.WorkloadDetailView.as_view(), name="workload-detail"
    ),
    path("uploads/", pages.UploadListView.as_view(), name="uploads"),
    path("uploads/new/", uploads.UploadCreateView.as_view(), name="upload-new"),
    path("uploads/<int:upload_id>/", uploads.UploadDetailView.as_view(), name="upload-detail"),
    path("uploads/<int:upload_id>/raw/", uploads.UploadRawView.as_view(), name="upload-raw"),
    path(
        "uploads/<int:upload_id>/restatement/",
        uploads.UploadRestatementView.as_view(),
        name="upload-restatement",
    ),
    path(
        "uploads/<int:upload_id>/delete/", uploads.UploadDeleteView.as_view(), name="upload-delete"
    ),
    path("sources/", sources.SourceListView.as_view(), name="sources"),
    path("sources/<int:source_id>/poll/", sources.SourcePollView.as_view(), name="source-poll"),
    path(
        "recommendations/",
        recommendations.RecommendationListView.as_view(),
        name="recommendations",
    ),
    path(
        "recommendations/<int:recommendation_id>/",
        recommendations.RecommendationDetailView.as_view(),
        name="recommendation-detail",
    ),
    path(
        "recommendations/<int:recommendation_id>/decision/",
        recommendations.RecommendationDecisionView.as_view(),
        name="recommendation-decision",
    ),
    path(
        "workloads/<int:workload_id>/class/",
        recommendations.WorkloadOverrideView.as_view(),
        name="workload-override",
    ),
    path("anomalies/", alerts.AnomalyListView.as_view(), name="anomalies"),
    path("alerts/", alerts.AlertListView.as_view(), name="alerts"),
    path(
        "alerts/<int:alert_id>/acknowledge/",
        alerts.AlertAcknowledgeView.as_view(),
        name="alert-acknowledge",
    ),
    path("reconciliation/", billing.ReconciliationView.as_view(), name="reconciliation"),
    path("statements/", statements.StatementListView.as_view(), name="statements"),
    path("statements/team/", statements.TeamStatementView.as_view(), name="statement-team"),
    path("statements/policy/", statements.StatementPolicyView.as_view(), name="statements-policy"),
    path("statements/send/", statements.StatementSendView.as_view(), name="statements-send"),
    path("statements.csv", statements.StatementCsvView.as_view(), name="statements-csv"),
    path("statements.xlsx", statements.StatementXlsxView.as_view(), name="statements-xlsx"),
    path("budgets/", budgets.BudgetListView.as_view(), name="budgets"),
    path("budgets/<int:budget_id>/", budgets.BudgetDetailView.as_view(), name="budget-detail"),
    path(
        "budgets/<int:budget_id>/delete/", budgets.BudgetDeleteView.as_view(), name="budget-delete"
    ),
]
