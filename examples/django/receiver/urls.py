from django.urls import path

from webhooks import views

urlpatterns = [
    path("webhooks/<str:account>", views.webhook),
    path("healthz", views.healthz),
    path("admin/state", views.state),
    path("admin/reset", views.reset),
]
