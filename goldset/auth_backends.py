"""The password backend (AUTHENTICATION_BACKENDS): Django's ModelBackend, whose read of the
signed-in person is one hand-written statement.

Every request of a signed-in person reads their user row (django.contrib.auth.get_user).
Through the ORM, building that one-row look-up cost more CPU than running it; by hand it
is the same SELECT of the same columns on the primary key, turned into the same User
instance (lib.rows). Logging in, permissions and everything else stay ModelBackend's.
"""

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend as DjangoModelBackend
from django.db import connection

from lib.rows import columns, model_from_row


class ModelBackend(DjangoModelBackend):
    def get_user(self, user_id):
        """The active user `user_id` (the primary key the session holds), None otherwise."""
        model = get_user_model()
        quote = connection.ops.quote_name
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT {columns(model, 'u')} FROM {quote(model._meta.db_table)} u WHERE u.{quote(model._meta.pk.column)} = %s",
                [user_id],
            )
            row = cursor.fetchone()
        if row is None:
            return None
        user = model_from_row(model, row)
        return user if self.user_can_authenticate(user) else None
