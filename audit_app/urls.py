from __future__ import annotations

from django.urls import path

from audit_app.views import pages

urlpatterns = [
    path("", pages.OverviewView.as_view(), name="overview"),
    path("workloads/", pages.WorkloadListView.as_view(), name="workloads"),
    path("uploads/", pages.UploadListView.as_view(), name="uploads"),
    path("recommendations/", pages.RecommendationListView.as_view(), name="recommendations"),
    path("reconciliation/", pages.ReconciliationView.as_view(), name="reconciliation"),
]
