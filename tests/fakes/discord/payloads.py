"""Discord's JSON shapes for the fake's state (API v10, as discord.py 2.7 reads them)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from tests.fakes.discord.model import DM, Channel, Guild, Interaction, Member, Message, Role, User
from tests.fakes.discord.world import World

ALL_PERMISSIONS = str((1 << 53) - 1)
Json = dict[str, Any]


def iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat()


def user(u: User) -> Json:
    return {
        "id": str(u.id),
        "username": u.username,
        "global_name": u.global_name,
        "discriminator": "0",
        "avatar": None,
        "bot": u.bot,
        "public_flags": 0,
    }


def member(m: Member, *, with_user: bool = True) -> Json:
    data: Json = {
        "nick": m.nick,
        "roles": [str(r) for r in m.roles],
        "joined_at": iso(0),
        "deaf": False,
        "mute": False,
        "flags": 0,
        "pending": False,
        "avatar": None,
        "premium_since": None,
        "communication_disabled_until": None,
    }
    if with_user:
        data["user"] = user(m.user)
    return data


def role(r: Role, guild: Guild) -> Json:
    return {
        "id": str(r.id),
        "name": r.name,
        "permissions": str(guild.everyone) if r.id == guild.id else "0",
        "position": 0 if r.id == guild.id else 1,
        "color": 0,
        "hoist": False,
        "managed": False,
        "mentionable": True,
        "flags": 0,
    }


def channel(c: Channel, world: World) -> Json:
    if c.type == DM:
        assert c.recipient is not None
        return {
            "id": str(c.id),
            "type": DM,
            "recipients": [user(c.recipient)],
            "last_message_id": None,
        }
    last = None if c.last_message_id is None else str(c.last_message_id)
    data: Json = {
        "id": str(c.id),
        "type": c.type,
        "guild_id": str(c.guild_id),
        "name": c.name,
        "last_message_id": last,
        "rate_limit_per_user": 0,
        "flags": 0,
    }
    if c.parent_id is None:
        data.update(
            position=0,
            permission_overwrites=c.overwrites,
            nsfw=False,
            parent_id=None,
            topic=None,
        )
        return data
    data.update(
        parent_id=str(c.parent_id),
        owner_id=str(c.owner_id),
        message_count=0,
        member_count=1,
        thread_metadata={
            "archived": c.archived,
            "locked": c.locked,
            "auto_archive_duration": 1440,
            "archive_timestamp": iso(c.created_at),
            "create_timestamp": iso(c.created_at),
        },
    )
    return data


def active_threads(guild_id: int, world: World) -> Json:
    """``GET /guilds/{id}/threads/active``: the threads, and the bot's membership of each."""
    threads = world.active_threads(guild_id)
    members = [
        {
            "id": str(t.id),
            "user_id": str(world.bot.id),
            "join_timestamp": iso(t.created_at),
            "flags": 0,
        }
        for t in threads
        if world.bot.id in t.members
    ]
    return {"threads": [channel(t, world) for t in threads], "members": members}


def message(m: Message, world: World, *, gateway: bool = False) -> Json:
    data: Json = {
        "id": str(m.id),
        "channel_id": str(m.channel_id),
        "author": user(m.author),
        "content": m.content,
        "timestamp": iso(m.created_at),
        "edited_timestamp": None if m.edited_at is None else iso(m.edited_at),
        "tts": False,
        "mention_everyone": "@everyone" in m.content or "@here" in m.content,
        "mentions": [user(u) for u in world.mentioned_users(m.content)],
        "mention_roles": [str(r) for r in world.mentioned_roles(m.content)],
        "attachments": m.attachments,
        "embeds": [],
        "pinned": _pinned(m, world),
        "type": 0,
        "flags": m.flags,
        "components": m.components,
    }
    if m.webhook_id is not None:
        data["webhook_id"] = str(m.webhook_id)
    if m.guild_id is not None:
        data["guild_id"] = str(m.guild_id)
        author = world.guilds[m.guild_id].members.get(m.author.id)
        if gateway and author is not None and m.webhook_id is None:
            data["member"] = member(author, with_user=False)
    return data


def _pinned(m: Message, world: World) -> bool:
    c = world.channels.get(m.channel_id)
    return c is not None and any(p[0] == m.id for p in c.pins)


def guild_create(g: Guild, world: World) -> Json:
    chans = [c for c in world.channels.values() if c.guild_id == g.id]
    return {
        "id": str(g.id),
        "name": g.name,
        "icon": None,
        "owner_id": str(g.owner_id),
        "roles": [role(r, g) for r in g.roles.values()],
        "channels": [channel(c, world) for c in chans if c.parent_id is None],
        "threads": [channel(c, world) for c in chans if c.parent_id is not None and not c.archived],
        "members": [member(world.guilds[g.id].members[world.bot.id])],
        "member_count": len(g.members),
        "unavailable": False,
        "large": False,
        "features": [],
        "emojis": [],
        "stickers": [],
        "presences": [],
        "voice_states": [],
        "stage_instances": [],
        "guild_scheduled_events": [],
        "soundboard_sounds": [],
        "premium_tier": 0,
        "preferred_locale": "en-US",
        "verification_level": 0,
        "default_message_notifications": 0,
        "explicit_content_filter": 0,
        "mfa_level": 0,
        "nsfw_level": 0,
        "system_channel_flags": 0,
        "joined_at": iso(0),
    }


def application(world: World) -> Json:
    return {
        "id": str(world.app_id),
        "name": world.bot.username,
        "icon": None,
        "description": "",
        "rpc_origins": [],
        "bot_public": True,
        "bot_require_code_grant": False,
        "owner": user(world.bot),
        "summary": "",
        "verify_key": "0" * 64,
        "team": None,
        "flags": world.app_flags,
        "interactions_endpoint_url": world.interactions_endpoint_url,
        "bot": user(world.bot),
    }


def interaction(i: Interaction, world: World) -> Json:
    c = world.channel(i.channel_id)
    data: Json = {
        "id": str(i.id),
        "application_id": str(world.app_id),
        "type": i.type,
        "data": i.data,
        "channel_id": str(c.id),
        "channel": channel(c, world),
        "token": i.token,
        "version": 1,
        "app_permissions": ALL_PERMISSIONS,
        "locale": "en-US",
        "entitlements": [],
        "authorizing_integration_owners": {},
        "context": 0 if i.guild_id else 1,
        "attachment_size_limit": 8 << 20,
    }
    if i.guild_id is not None:
        data["guild_id"] = str(i.guild_id)
        data["guild_locale"] = "en-US"
        found = world.guilds[i.guild_id].members[i.user.id]
        data["member"] = {**member(found), "permissions": ALL_PERMISSIONS}
    else:
        data["user"] = user(i.user)
    if i.message_id is not None:
        data["message"] = message(world.messages[i.message_id], world)
    elif i.note is not None:
        data["message"] = i.note
    return data
