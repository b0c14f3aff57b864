"""The session engine (SESSION_ENGINE): Django's database sessions, whose read is one
hand-written statement.

Every request of a signed-in person reads their session first. Through the ORM, building
that one-row look-up cost about three times the CPU of running it (0.3 ms a request, a
tenth of a judging request's CPU); by hand it is the same SELECT, on the same primary
key, with the same expiry check. Saving, creating, deleting and clearing expired sessions
stay Django's.
"""

from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore
from django.db import connections, router
from django.utils import timezone


class SessionStore(DatabaseSessionStore):
    def _get_session_from_db(self):
        """The session row if it exists and has not expired; None otherwise (with the key
        forgotten, so that a save makes a new one), as Django's read does."""
        model = self.model
        connection = connections[router.db_for_read(model)]
        quote = connection.ops.quote_name
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT {quote('session_data')} FROM {quote(model._meta.db_table)} "
                f"WHERE {quote('session_key')} = %s AND {quote('expire_date')} > %s",
                [self.session_key, connection.ops.adapt_datetimefield_value(timezone.now())],
            )
            row = cursor.fetchone()
        if row is None:
            self._session_key = None
            return None
        # Without its expiry date, which load(), the one caller, does not read.
        return model(session_key=self.session_key, session_data=row[0])
