"""REST API of workspaces and their members: the caller's workspaces (list, create), a workspace's members (list,
add by username or email, change a role, remove). Who may do what is `webapp.workspaces.policy`'s, checked by
`webapp.workspaces.permissions.WorkspaceRole` before each view runs."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.api.errors import ERROR_RESPONSES
from webapp.api.inputs import validated_input
from webapp.workspaces import invites, selectors, services
from webapp.workspaces.models import Invite, Membership, Role, Workspace

TAG = ["Workspaces"]


class WorkspaceInput(serializers.Serializer):
    name = serializers.CharField(max_length=100)


class WorkspaceUpdateInput(serializers.Serializer):
    name = serializers.CharField(max_length=100, required=False)
    hide_dead_letter_payloads = serializers.BooleanField(
        required=False, help_text="Viewers see each dead letter's error and position, not its payload."
    )


class WorkspaceOutput(serializers.ModelSerializer):
    role = serializers.SerializerMethodField(help_text="The caller's role: viewer, editor or admin.")

    class Meta:
        model = Workspace
        fields = ["id", "name", "role", "hide_dead_letter_payloads", "created_at"]

    def get_role(self, workspace: Workspace) -> str | None:
        return self.context.get("roles", {}).get(workspace.pk)


class MemberInput(serializers.Serializer):
    username = serializers.CharField(max_length=254, help_text="The user's username or email address.")
    role = serializers.ChoiceField(Role.choices)


class MemberUpdateInput(serializers.Serializer):
    role = serializers.ChoiceField(Role.choices)


class MemberOutput(serializers.ModelSerializer):
    username = serializers.CharField(source="user.get_username", read_only=True)
    email = serializers.CharField(source="user.email", read_only=True)

    class Meta:
        model = Membership
        fields = ["id", "username", "email", "role", "workspace", "created_at"]


def _workspace_output(request: Request, workspaces: object, **kwargs: object) -> dict:
    roles = selectors.role_by_workspace(user=request.user)
    return WorkspaceOutput(workspaces, context={"roles": roles}, **kwargs).data


class WorkspaceListCreateApi(APIView):
    acts_in_no_workspace = True  # creating a workspace makes the caller its admin (webapp.workspaces.permissions)

    @extend_schema(tags=TAG, operation_id="workspaces_list", responses={200: WorkspaceOutput(many=True)})
    def get(self, request: Request) -> Response:
        return Response(_workspace_output(request, selectors.workspace_list(user=request.user), many=True))

    @extend_schema(
        tags=TAG,
        operation_id="workspaces_create",
        description="A new workspace, with the caller as its admin.",
        request=WorkspaceInput,
        responses={201: WorkspaceOutput, **ERROR_RESPONSES},
    )
    def post(self, request: Request) -> Response:
        data = validated_input(WorkspaceInput, request.data)
        workspace = services.workspace_create(user=request.user, name=data["name"])
        return Response(_workspace_output(request, workspace), status=status.HTTP_201_CREATED)


class WorkspaceDetailApi(APIView):
    workspace_model = Workspace
    workspace_actions = {"PATCH": "workspace.settings"}

    @extend_schema(tags=TAG, operation_id="workspaces_retrieve", responses={200: WorkspaceOutput, **ERROR_RESPONSES})
    def get(self, request: Request, pk: int) -> Response:
        return Response(_workspace_output(request, selectors.workspace_get(user=request.user, pk=pk)))

    @extend_schema(
        tags=TAG,
        operation_id="workspaces_update",
        description="The workspace's name and settings (admins).",
        request=WorkspaceUpdateInput,
        responses={200: WorkspaceOutput, **ERROR_RESPONSES},
    )
    def patch(self, request: Request, pk: int) -> Response:
        workspace = selectors.workspace_get(user=request.user, pk=pk)
        data = validated_input(WorkspaceUpdateInput, request.data, partial=True)
        workspace = services.workspace_update(workspace=workspace, actor=request.user, data=data)
        return Response(_workspace_output(request, workspace))


class MemberListCreateApi(APIView):
    workspace_model = Workspace
    workspace_actions = {"POST": "member.manage"}

    @extend_schema(
        tags=TAG, operation_id="workspace_members_list", responses={200: MemberOutput(many=True), **ERROR_RESPONSES}
    )
    def get(self, request: Request, pk: int) -> Response:
        workspace = selectors.workspace_get(user=request.user, pk=pk)
        return Response(MemberOutput(selectors.membership_list(workspace=workspace), many=True).data)

    @extend_schema(
        tags=TAG,
        operation_id="workspace_members_create",
        description="Add a user (by username or email) with a role (admins). 409 when they are a member already.",
        request=MemberInput,
        responses={201: MemberOutput, **ERROR_RESPONSES},
    )
    def post(self, request: Request, pk: int) -> Response:
        workspace = selectors.workspace_get(user=request.user, pk=pk)
        data = validated_input(MemberInput, request.data)
        membership = services.member_add(
            workspace=workspace, actor=request.user, username=data["username"], role=data["role"]
        )
        return Response(MemberOutput(membership).data, status=status.HTTP_201_CREATED)


class MemberDetailApi(APIView):
    workspace_model = Workspace
    workspace_actions = {"PATCH": "member.manage", "DELETE": "member.manage"}

    @extend_schema(
        tags=TAG,
        operation_id="workspace_members_update",
        description="Change a member's role (admins). 409 for the last admin's own demotion.",
        request=MemberUpdateInput,
        responses={200: MemberOutput, **ERROR_RESPONSES},
    )
    def patch(self, request: Request, pk: int, member: int) -> Response:
        workspace = selectors.workspace_get(user=request.user, pk=pk)
        membership = selectors.membership_get(workspace=workspace, pk=member)
        data = validated_input(MemberUpdateInput, request.data)
        membership = services.member_role_change(membership=membership, actor=request.user, role=data["role"])
        return Response(MemberOutput(membership).data)

    @extend_schema(
        tags=TAG,
        operation_id="workspace_members_delete",
        description="Remove a member (admins). The last admin cannot be removed (409).",
        responses={204: None, **ERROR_RESPONSES},
    )
    def delete(self, request: Request, pk: int, member: int) -> Response:
        workspace = selectors.workspace_get(user=request.user, pk=pk)
        services.member_remove(membership=selectors.membership_get(workspace=workspace, pk=member), actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class InviteInput(serializers.Serializer):
    role = serializers.ChoiceField(Role.choices)
    email = serializers.EmailField(required=False, allow_blank=True, help_text="Whom it is for (a note for admins).")
    expires_in_days = serializers.IntegerField(
        required=False, min_value=1, max_value=invites.MAX_INVITE_DAYS, default=invites.INVITE_DAYS
    )


class InviteOutput(serializers.ModelSerializer):
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = Invite
        fields = ["id", "workspace", "role", "email", "created_by", "created_at", "expires_at"]


class InviteCreatedOutput(InviteOutput):
    link = serializers.CharField(help_text="The one-time sign-up link: shown in this answer only.")

    class Meta(InviteOutput.Meta):
        fields = [*InviteOutput.Meta.fields, "link"]


class InviteListCreateApi(APIView):
    workspace_model = Workspace
    workspace_actions = {"POST": "member.manage"}

    @extend_schema(
        tags=TAG,
        operation_id="workspace_invites_list",
        description="The workspace's open invites (neither used nor expired), without their links.",
        responses={200: InviteOutput(many=True), **ERROR_RESPONSES},
    )
    def get(self, request: Request, pk: int) -> Response:
        workspace = selectors.workspace_get(user=request.user, pk=pk)
        return Response(InviteOutput(invites.invite_pending_list(workspace=workspace), many=True).data)

    @extend_schema(
        tags=TAG,
        operation_id="workspace_invites_create",
        description=(
            "Invite a new local user (admins): the answer's `link` lets one person sign up into the workspace with "
            "the role, once, until it expires. It is shown only here."
        ),
        request=InviteInput,
        responses={201: InviteCreatedOutput, **ERROR_RESPONSES},
    )
    def post(self, request: Request, pk: int) -> Response:
        workspace = selectors.workspace_get(user=request.user, pk=pk)
        data = validated_input(InviteInput, request.data)
        invite, secret = invites.invite_create(workspace=workspace, actor=request.user, **data)
        invite.link = request.build_absolute_uri(reverse("workspaces:invite_accept", args=[secret]))
        return Response(InviteCreatedOutput(invite).data, status=status.HTTP_201_CREATED)
