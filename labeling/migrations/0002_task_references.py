"""Database checks of what a judging task points to, in place of per-row foreign keys.

A pool writes millions of tasks in one COPY; a foreign key checks each row with its own
lookup, which made writing them several times slower (see labeling.models.JudgingTask).
These triggers check a whole statement's distinct references at once instead, and check more
than foreign keys would: the task's query and pool belong to its golden set, its page
to that set's corpus, and a lease names an existing user. The other references cannot
be changed afterwards, and a pool cannot be deleted unless its tasks go in the same
transaction (the ORM deletes them).
"""

from django.conf import settings
from django.db import migrations

POSTGRES = """
CREATE FUNCTION labeling_task_check_references() RETURNS trigger AS $$
DECLARE
    bad record;
BEGIN
    -- One pass over the new rows gathers the distinct references (a pool of millions of
    -- tasks names some thousands of queries and pages), and only those are looked up.
    -- Joining every row instead cost more than writing the rows: LIMIT 1 led the planner
    -- to an index lookup per row per table, 2.5 s of server time on 730,000 tasks
    -- against 0.5 s for this.
    SELECT r.golden_set_id, r.pool_id, r.query_id, r.page_id, r.leased_to_id INTO bad
    FROM (
        SELECT golden_set_id, pool_id, query_id, page_id, leased_to_id FROM new_tasks
        GROUP BY GROUPING SETS ((golden_set_id, pool_id, query_id, leased_to_id), (golden_set_id, page_id))
    ) AS r
    LEFT JOIN goldenset_goldenset AS s ON s.id = r.golden_set_id
    LEFT JOIN goldenset_query AS q ON q.id = r.query_id AND q.golden_set_id = r.golden_set_id
    LEFT JOIN goldenset_page AS p ON p.id = r.page_id AND p.corpus_id = s.corpus_id
    LEFT JOIN labeling_pool AS l ON l.id = r.pool_id AND l.golden_set_id = r.golden_set_id
    LEFT JOIN {users} AS u ON u.id = r.leased_to_id
    -- golden_set_id is NOT NULL and in both grouping sets; query_id and page_id are NOT
    -- NULL, so a NULL one marks the other grouping set.
    WHERE s.id IS NULL OR (r.query_id IS NOT NULL AND q.id IS NULL) OR (r.page_id IS NOT NULL AND p.id IS NULL)
       OR (r.pool_id IS NOT NULL AND l.id IS NULL) OR (r.leased_to_id IS NOT NULL AND u.id IS NULL)
    LIMIT 1;
    IF FOUND THEN
        -- Name one offending row (the error path only: a second scan is no cost here).
        SELECT n.id, n.golden_set_id, n.pool_id, n.query_id, n.page_id, n.leased_to_id INTO bad
        FROM new_tasks AS n
        WHERE n.golden_set_id = bad.golden_set_id
          AND (bad.query_id IS NULL OR (n.query_id = bad.query_id AND n.pool_id IS NOT DISTINCT FROM bad.pool_id
                                        AND n.leased_to_id IS NOT DISTINCT FROM bad.leased_to_id))
          AND (bad.page_id IS NULL OR n.page_id = bad.page_id)
        LIMIT 1;
        RAISE EXCEPTION 'goldset: judging task % points to golden set %, pool %, query %, page %, user %: one is missing or belongs to another golden set',
            bad.id, bad.golden_set_id, bad.pool_id, bad.query_id, bad.page_id, bad.leased_to_id
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql
-- The hash of the distinct pages (100,000 in a large pool) spills to disk at the
-- default 4 MB.
SET work_mem = '64MB';

CREATE FUNCTION labeling_task_check_leases() RETURNS trigger AS $$
DECLARE
    bad record;
BEGIN
    SELECT n.id, n.leased_to_id INTO bad
    FROM new_tasks AS n LEFT JOIN {users} AS u ON u.id = n.leased_to_id
    WHERE n.leased_to_id IS NOT NULL AND u.id IS NULL
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'goldset: judging task % is leased to user %, who does not exist', bad.id, bad.leased_to_id
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER labeling_task_references_insert
    AFTER INSERT ON labeling_judgingtask REFERENCING NEW TABLE AS new_tasks
    FOR EACH STATEMENT EXECUTE FUNCTION labeling_task_check_references();

CREATE TRIGGER labeling_task_leases_update
    AFTER UPDATE ON labeling_judgingtask REFERENCING NEW TABLE AS new_tasks
    FOR EACH STATEMENT EXECUTE FUNCTION labeling_task_check_leases();

CREATE FUNCTION labeling_task_refuse_repointing() RETURNS trigger AS $$
BEGIN
    IF (NEW.golden_set_id, NEW.pool_id, NEW.query_id, NEW.page_id) IS DISTINCT FROM (OLD.golden_set_id, OLD.pool_id, OLD.query_id, OLD.page_id) THEN
        RAISE EXCEPTION 'goldset: judging task % cannot be moved to another golden set, pool, query or page', OLD.id
            USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER labeling_task_references_update
    BEFORE UPDATE OF golden_set_id, pool_id, query_id, page_id ON labeling_judgingtask
    FOR EACH ROW EXECUTE FUNCTION labeling_task_refuse_repointing();

CREATE FUNCTION labeling_pool_refuse_orphans() RETURNS trigger AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM labeling_judgingtask WHERE pool_id = OLD.id) THEN
        RAISE EXCEPTION 'goldset: pool % still has judging tasks', OLD.id USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

-- Checked at commit, not at the DELETE: the ORM's collector may delete the pool row
-- before its tasks (JudgingTask.pool is nullable, so it sets no order between them).
CREATE CONSTRAINT TRIGGER labeling_pool_tasks_first
    AFTER DELETE ON labeling_pool DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION labeling_pool_refuse_orphans();
"""

POSTGRES_DROP = """
DROP TRIGGER IF EXISTS labeling_pool_tasks_first ON labeling_pool;
DROP TRIGGER IF EXISTS labeling_task_references_update ON labeling_judgingtask;
DROP TRIGGER IF EXISTS labeling_task_leases_update ON labeling_judgingtask;
DROP TRIGGER IF EXISTS labeling_task_references_insert ON labeling_judgingtask;
DROP FUNCTION IF EXISTS labeling_pool_refuse_orphans();
DROP FUNCTION IF EXISTS labeling_task_refuse_repointing();
DROP FUNCTION IF EXISTS labeling_task_check_leases();
DROP FUNCTION IF EXISTS labeling_task_check_references();
"""

# SQLite has no statement triggers; at the embedded default's sizes a row trigger is cheap.
SQLITE = [
    """
    CREATE TRIGGER labeling_task_references_insert BEFORE INSERT ON labeling_judgingtask
    WHEN NOT EXISTS (SELECT 1 FROM goldenset_query WHERE id = NEW.query_id AND golden_set_id = NEW.golden_set_id)
      OR NOT EXISTS (
        SELECT 1 FROM goldenset_page AS p JOIN goldenset_goldenset AS s ON s.corpus_id = p.corpus_id
        WHERE p.id = NEW.page_id AND s.id = NEW.golden_set_id
      )
      OR (NEW.pool_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM labeling_pool WHERE id = NEW.pool_id AND golden_set_id = NEW.golden_set_id))
      OR (NEW.leased_to_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM {users} WHERE id = NEW.leased_to_id))
    BEGIN
        SELECT RAISE(ABORT, 'goldset: a judging task points to a missing row or to one of another golden set');
    END;
    """,
    """
    CREATE TRIGGER labeling_task_references_update BEFORE UPDATE OF golden_set_id, pool_id, query_id, page_id ON labeling_judgingtask
    WHEN NEW.golden_set_id IS NOT OLD.golden_set_id OR NEW.pool_id IS NOT OLD.pool_id
      OR NEW.query_id IS NOT OLD.query_id OR NEW.page_id IS NOT OLD.page_id
    BEGIN
        SELECT RAISE(ABORT, 'goldset: a judging task cannot be moved to another golden set, pool, query or page');
    END;
    """,
    """
    CREATE TRIGGER labeling_task_leases_update BEFORE UPDATE OF leased_to_id ON labeling_judgingtask
    WHEN NEW.leased_to_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM {users} WHERE id = NEW.leased_to_id)
    BEGIN
        SELECT RAISE(ABORT, 'goldset: a judging task is leased to a user who does not exist');
    END;
    """,
]
SQLITE_DROP = [
    "DROP TRIGGER IF EXISTS labeling_task_references_insert;",
    "DROP TRIGGER IF EXISTS labeling_task_references_update;",
    "DROP TRIGGER IF EXISTS labeling_task_leases_update;",
]


def create_triggers(apps, schema_editor):
    connection = schema_editor.connection
    users = connection.ops.quote_name(apps.get_model(settings.AUTH_USER_MODEL)._meta.db_table)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(POSTGRES.replace("{users}", users))
        elif connection.vendor == "sqlite":
            for statement in SQLITE:
                cursor.execute(statement.replace("{users}", users))


def drop_triggers(apps, schema_editor):
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(POSTGRES_DROP)
        elif connection.vendor == "sqlite":
            for statement in SQLITE_DROP:
                cursor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("labeling", "0001_initial"), migrations.swappable_dependency(settings.AUTH_USER_MODEL)]
    operations = [migrations.RunPython(create_triggers, drop_triggers)]
