from django.contrib import admin

from webapp.wizard.models import WizardDraft


@admin.register(WizardDraft)
class WizardDraftAdmin(admin.ModelAdmin):
    """Drafts hold no secrets (connections are saved separately); operators may look and delete."""

    list_display = ("id", "user", "pipeline", "step", "reached", "updated_at")
    list_filter = ("step",)
    search_fields = ("user__username", "pipeline__name")
    readonly_fields = ("user", "pipeline", "step", "reached", "data", "created_at", "updated_at")

    def has_add_permission(self, request):
        return False
