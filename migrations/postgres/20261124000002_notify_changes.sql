-- Every change also notifies the instances listening (channel branch_atm_changes, the
-- topic as payload), in the same transaction as its counter bump: PostgreSQL delivers it
-- at commit, and only then, and folds a transaction's identical notices into one. An
-- instance reloads the topic at once instead of at its next poll; the poll of change_log
-- stays, for notices lost while an instance was not listening.
CREATE OR REPLACE FUNCTION change_log_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE change_log SET revision = revision + 1 WHERE topic = TG_ARGV[0];
    PERFORM pg_notify('branch_atm_changes', TG_ARGV[0]);
    RETURN NULL;
END
$$;
