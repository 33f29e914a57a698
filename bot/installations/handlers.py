"""Remember where the App is installed: one row per installation (account, repository
selection, suspended), kept up to date by the `installation` events.

The repositories themselves are not kept: nothing here reads them, and a rename or transfer
would leave a stored name stale (GitHub's `GET /installation/repositories` is the list)."""

from __future__ import annotations

import logging

from gidgethub.routing import Router
from gidgethub.sansio import Event

from bot.installations.accounts import installation_from_payload, repository_names
from bot.intake.dispatch import Context

log = logging.getLogger(__name__)
router = Router()


@router.register("installation", action="created")
@router.register("installation", action="new_permissions_accepted")
@router.register("installation", action="unsuspend")
async def installation_active(event: Event, context: Context) -> None:
    installation = installation_from_payload(event.data, suspended=False, now=context.clock())
    await context.storage.upsert_installation(installation)
    log.info(
        "installation %s on %s (%d repositories)",
        event.data.get("action"),
        installation.account,
        len(repository_names(event.data.get("repositories"))),
        extra=context.log_extra(),
    )


@router.register("installation", action="suspend")
async def installation_suspended(event: Event, context: Context) -> None:
    await context.storage.upsert_installation(
        installation_from_payload(event.data, suspended=True, now=context.clock())
    )
    log.info("installation suspended", extra=context.log_extra())


@router.register("installation", action="deleted")
async def installation_deleted(event: Event, context: Context) -> None:
    await context.storage.delete_installation(int(event.data["installation"]["id"]))
    log.info("installation deleted", extra=context.log_extra())


@router.register("installation_repositories")
async def repositories_changed(event: Event, context: Context) -> None:
    """An installation this store missed (one that predates the database) is recorded."""
    installation = installation_from_payload(event.data, suspended=False, now=context.clock())
    if await context.storage.get_installation(installation.installation_id) is None:
        await context.storage.upsert_installation(installation)
