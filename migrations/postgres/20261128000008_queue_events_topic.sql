-- The queue event log's change counter (issue 44): each append that stores a new event
-- rewrites queue_log's one row in its transaction, and one trigger on that row moves the
-- counter (as atm_set does for the ATMs), so an instance reads the log only after
-- another instance wrote to it. It sends no notice: appends come hundreds a second, and
-- each notice costs every instance a refresh; the view's poll finds the counter moved.
CREATE TABLE queue_log (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    received_at BIGINT NOT NULL  -- microseconds: the latest append's receipt time
);
INSERT INTO queue_log (id, received_at) VALUES (1, 0);
INSERT INTO change_log (topic, revision) VALUES ('queue_events', 0);
CREATE FUNCTION change_log_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE change_log SET revision = revision + 1 WHERE topic = TG_ARGV[0];
    RETURN NULL;
END
$$;
CREATE TRIGGER queue_events_changed AFTER UPDATE ON queue_log
    FOR EACH STATEMENT EXECUTE FUNCTION change_log_count('queue_events');
