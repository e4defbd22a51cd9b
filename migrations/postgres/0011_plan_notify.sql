-- A plan change is announced to every node of a cluster by the database itself, whoever made
-- it (billing, the command line, an operator's SQL): NOTIFY is delivered at commit, on the
-- channel the nodes listen to (`services/cluster/events.rs` decodes `plan:<workspace>:<plan>`).
CREATE FUNCTION memvault_plan_changed() RETURNS TRIGGER AS $$
BEGIN
    PERFORM pg_notify('memvault_cluster', 'plan:' || NEW.id::TEXT || ':' || NEW.plan);
    RETURN NULL;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER workspaces_plan_changed AFTER UPDATE OF plan ON workspaces
    FOR EACH ROW WHEN (NEW.plan IS NOT NULL AND NEW.plan IS DISTINCT FROM OLD.plan)
    EXECUTE FUNCTION memvault_plan_changed();
