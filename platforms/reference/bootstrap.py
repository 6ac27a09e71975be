"""First start: the schema, and the admin user with a personal organisation.

Run once before the server listens, so a database that cannot be reached or
written is one clear line at startup instead of a 500 on the first request.
Existing rows are kept; the admin's password is reset to the configured one
so the documented credentials always work.
"""

from __future__ import annotations

from sqlalchemy import select

from platforms.reference.auth import check_password, hash_password
from platforms.reference.db import Database, create_engine
from platforms.reference.models import Base, Membership, Org, User
from platforms.reference.settings import Settings


async def prepare_database(settings: Settings) -> None:
    """Create missing tables and make sure the admin and their organisation exist."""
    db = Database(create_engine(settings))
    try:
        async with db.engine.begin() as connection:
            await connection.run_sync(Base.metadata.create_all)
        async with db.session() as session:
            email = settings.admin_email.lower()
            user = await session.scalar(select(User).where(User.email == email))
            if user is None:
                user = User(email=email, password_hash=hash_password(settings.admin_password))
                session.add(user)
                await session.flush()
            elif not check_password(settings.admin_password, user.password_hash):
                user.password_hash = hash_password(settings.admin_password)
            personal = await session.scalar(
                select(Org)
                .join(Membership, Membership.org_id == Org.id)
                .where(Membership.user_id == user.id, Org.is_personal.is_(True))
            )
            if personal is None:
                local = email.split("@")[0]
                org = Org(
                    name=f"{local}'s organisation", slug=f"{local}-{user.id[:8]}", is_personal=True
                )
                session.add(org)
                await session.flush()
                session.add(Membership(org_id=org.id, user_id=user.id, role="owner"))
            await session.commit()
    finally:
        await db.engine.dispose()
