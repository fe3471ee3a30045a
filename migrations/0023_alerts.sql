-- 0023_alerts: usage alerts and spend limits. A rule watches an account
-- (or every account) for the period's running amount, estimated from the
-- merged rollups and the account's book, or a usage quantity, and names
-- the percents of its threshold to raise at ("80% and 100% of 500 USD
-- this month"). meterd's background thread evaluates them (alerts.c);
-- each crossing is raised once per period: a row here and an
-- alert.triggered event, in one transaction.

CREATE TABLE alert_rules (
    rule_id     bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id  meter_id    REFERENCES accounts ON DELETE RESTRICT,
    name        text        NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    metric      text        NOT NULL CHECK (metric IN ('amount', 'vcpu_hours',
                            'gib_hours', 'storage_gib_hours', 'egress_gb',
                            'running_hours')),
    threshold   numeric     NOT NULL CHECK (threshold > 0),
    currency    char(3)     CHECK (currency ~ '^[A-Z]{3}$'),
    percents    integer[]   NOT NULL DEFAULT '{100}'
                CHECK (cardinality(percents) BETWEEN 1 AND 10
                       AND 0 < ALL (percents) AND 1000 >= ALL (percents)
                       AND array_position(percents, NULL) IS NULL),
    created_at  timestamptz NOT NULL DEFAULT now(),
    removed_at  timestamptz,
    CHECK ((metric = 'amount') = (currency IS NOT NULL))
);
COMMENT ON TABLE alert_rules IS
    'usage alerts and spend limits: a threshold on the period''s running '
    'amount or a quantity, raised at some percents of it';
COMMENT ON COLUMN alert_rules.rule_id IS 'the rule';
COMMENT ON COLUMN alert_rules.account_id IS 'the account; NULL: every account';
COMMENT ON COLUMN alert_rules.name IS 'what the alert says it is';
COMMENT ON COLUMN alert_rules.metric IS
    'amount (estimated from the rollups and the account''s book, in its '
    'currency), or a quantity of the period''s usage';
COMMENT ON COLUMN alert_rules.threshold IS
    'the limit, in currency for an amount, else in the metric''s unit';
COMMENT ON COLUMN alert_rules.currency IS
    'an amount''s: an account whose book is in another is not watched';
COMMENT ON COLUMN alert_rules.percents IS
    'the percents of threshold at which to raise, each once per period';
COMMENT ON COLUMN alert_rules.created_at IS 'when it was added';
COMMENT ON COLUMN alert_rules.removed_at IS
    'when it was removed; its crossings stay';
CREATE INDEX alert_rules_account ON alert_rules (account_id)
    WHERE removed_at IS NULL;

CREATE TABLE alert_crossings (
    account_id  meter_id    NOT NULL REFERENCES accounts ON DELETE RESTRICT,
    rule_id     bigint      NOT NULL REFERENCES alert_rules,
    period      date        NOT NULL CHECK (extract(day FROM period) = 1),
    percent     integer     NOT NULL,
    value       numeric     NOT NULL,
    crossed_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, rule_id, period, percent)
);
COMMENT ON TABLE alert_crossings IS
    'each percent of a rule an account crossed, once per period';
COMMENT ON COLUMN alert_crossings.account_id IS 'the account';
COMMENT ON COLUMN alert_crossings.rule_id IS 'the rule';
COMMENT ON COLUMN alert_crossings.period IS 'the period''s first day';
COMMENT ON COLUMN alert_crossings.percent IS 'the percent of the threshold';
COMMENT ON COLUMN alert_crossings.value IS 'the metric when it was seen';
COMMENT ON COLUMN alert_crossings.crossed_at IS 'when it was seen';

CREATE FUNCTION audit_alert_rules() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM audit('alert.add', NEW.account_id, 'alert ' || NEW.rule_id,
                      jsonb_build_object('name', NEW.name, 'metric',
                                         NEW.metric, 'threshold',
                                         NEW.threshold::text, 'currency',
                                         NEW.currency, 'percents',
                                         NEW.percents));
    ELSIF OLD.removed_at IS NULL AND NEW.removed_at IS NOT NULL THEN
        PERFORM audit('alert.remove', NEW.account_id, 'alert ' || NEW.rule_id,
                      jsonb_build_object('name', NEW.name));
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER alert_rules_audit AFTER INSERT OR UPDATE ON alert_rules
    FOR EACH ROW EXECUTE FUNCTION audit_alert_rules();
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION audit_alert_rules() SECURITY DEFINER '
                   'SET search_path = %I, pg_temp', current_schema());
END
$$;

GRANT SELECT, INSERT, UPDATE ON alert_rules TO meter_worker;
GRANT SELECT, INSERT ON alert_crossings TO meter_worker;

-- Usage stored for an account on no price book, told once per account
-- and period (a usage.unbilled event; the overview lists it always).
CREATE TABLE unbilled_notices (
    account_id  meter_id    NOT NULL REFERENCES accounts ON DELETE RESTRICT,
    period      date        NOT NULL CHECK (extract(day FROM period) = 1),
    raised_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, period)
);
COMMENT ON TABLE unbilled_notices IS
    'the usage.unbilled events raised: one per account and period';
COMMENT ON COLUMN unbilled_notices.account_id IS 'the account';
COMMENT ON COLUMN unbilled_notices.period IS 'the period''s first day';
COMMENT ON COLUMN unbilled_notices.raised_at IS 'when it was raised';
GRANT SELECT, INSERT ON unbilled_notices TO meter_worker;
