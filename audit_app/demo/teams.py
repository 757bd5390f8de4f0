"""The demo's team directory: every demo team with a display name and an owner address, the
demo engineer a member of the platform team (so their Statements page shows it), and the
platform team named as the owner for the ``owner`` allocation policy. Addresses are
``example.invalid``: under `make run` the statements land as files in ``var/mail/``."""

from __future__ import annotations

from audit_app.demo.workloads import DEFAULT_WORKLOADS
from audit_app.models import AllocationRule, Team

PLATFORM_TEAM = "ml-platform"
DEMO_ENGINEER = "engineer"


def demo_teams_ensure() -> list[Team]:
    """Fill what is blank in the demo teams' rows (a row someone edited keeps its values)."""
    teams = []
    for name in sorted({spec.team for spec in DEFAULT_WORKLOADS}):
        team, _ = Team.objects.get_or_create(name=name)
        team.display_name = team.display_name or name.replace("-", " ").capitalize()
        team.owner_email = team.owner_email or f"{name}-lead@example.invalid"
        if name == PLATFORM_TEAM and DEMO_ENGINEER not in team.members:
            team.members = [*team.members, DEMO_ENGINEER]
        team.save()
        teams.append(team)
    AllocationRule.objects.get_or_create(pool="", defaults={"owner_team": PLATFORM_TEAM})
    return teams
