-- 0022_webhooks: events out. What billing does that a provider's own
-- systems must hear of (an invoice finalized or voided, an account's run
-- failed) is written to an outbox, webhook_events, in the transaction
-- that does it, with one delivery row for each endpoint that listens:
-- so an event is never sent for what was rolled back, nor lost for what
-- was committed. meterd's delivery thread (meter/meterd/webhooks.c)
-- claims due deliveries with a lease (locked_until), sends them outside
-- any transaction, and records the outcome; a meterd killed mid-send
-- leaves the lease to run out and the delivery to be sent again, by it
-- or another meterd (at least once; receivers dedupe on event_id).
-- docs/webhooks.md is the receiver's side.
--
-- All three tables live in the catalog (docs/scale.md): they are small
-- and global, and every meterd reaches them.

-- The event types an endpoint may listen to and an event may have. A
-- new type is added here (ALTER DOMAIN ... ADD CONSTRAINT), once.
CREATE DOMAIN webhook_event_type AS text
    CHECK (VALUE IN ('invoice.finalized', 'invoice.voided',
                     'invoice.run_failed', 'usage.unbilled',
                     'alert.triggered'));
COMMENT ON DOMAIN webhook_event_type IS
    'the types of webhook events (docs/webhooks.md)';

CREATE TABLE webhook_endpoints (
    endpoint_id bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    url         text        NOT NULL
                            CHECK (url ~ '^https?://[^[:space:]]+$'
                                   AND length(url) <= 2000),
    secret      text        NOT NULL
                            CHECK (secret ~ '^whsec_[A-Za-z0-9+/]+={0,2}$'
                                   AND length(secret) BETWEEN 38 AND 94),
    event_types webhook_event_type[] NOT NULL DEFAULT '{}'
                            CHECK (array_ndims(event_types) IS NULL
                                   OR array_ndims(event_types) = 1),
    created_at  timestamptz NOT NULL DEFAULT now(),
    disabled_at timestamptz
);
COMMENT ON TABLE webhook_endpoints IS
    'where events are sent: registered by an admin (meterctl webhooks add, '
    'POST /v1/admin/webhooks); removing one disables it, keeping its '
    'deliveries'' history';
COMMENT ON COLUMN webhook_endpoints.endpoint_id IS 'the endpoint''s number';
COMMENT ON COLUMN webhook_endpoints.url IS 'where each event is POSTed';
COMMENT ON COLUMN webhook_endpoints.secret IS
    'the signing secret, Standard Webhooks'' form: whsec_ and the base64 of '
    '24 to 64 random bytes, the HMAC-SHA-256 key; shown once, when created';
COMMENT ON COLUMN webhook_endpoints.event_types IS
    'the types it receives; empty: all';
COMMENT ON COLUMN webhook_endpoints.created_at IS 'when it was registered';
COMMENT ON COLUMN webhook_endpoints.disabled_at IS
    'when it was removed: it gets no new event, and its pending deliveries '
    'were given up; NULL while it is live';

CREATE TABLE webhook_events (
    event_pk   bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id   text        NOT NULL UNIQUE
                           DEFAULT 'evt_' || replace(gen_random_uuid()::text,
                                                     '-', '')
                           CHECK (event_id ~ '^evt_[0-9a-f]{32}$'),
    type       webhook_event_type NOT NULL,
    account_id meter_id    REFERENCES accounts,
    payload    jsonb       NOT NULL CHECK (jsonb_typeof(payload) = 'object'),
    created_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE webhook_events IS
    'the outbox: one row an event, written in the transaction of what it '
    'reports (meter_db_event_add)';
COMMENT ON COLUMN webhook_events.event_pk IS
    'order of the events; of one account, the order they happened in (their '
    'transactions hold the account''s row)';
COMMENT ON COLUMN webhook_events.event_id IS
    'the public id, sent as the body''s id and the Webhook-Id header: the '
    'same on every attempt, for receivers to dedupe';
COMMENT ON COLUMN webhook_events.type IS 'what happened';
COMMENT ON COLUMN webhook_events.account_id IS
    'the account concerned; NULL for an event of the whole fleet';
COMMENT ON COLUMN webhook_events.payload IS 'the body''s data member';
COMMENT ON COLUMN webhook_events.created_at IS
    'when (the transaction''s time), sent as the body''s created';
CREATE INDEX webhook_events_account ON webhook_events (account_id, event_pk);

CREATE TABLE webhook_deliveries (
    endpoint_id     bigint      NOT NULL REFERENCES webhook_endpoints,
    event_pk        bigint      NOT NULL REFERENCES webhook_events
                                ON DELETE CASCADE,
    account_id      text        NOT NULL,
    attempts        integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    locked_until    timestamptz,
    last_attempt_at timestamptz,
    last_status     integer     CHECK (last_status BETWEEN 100 AND 999),
    last_error      text        CHECK (length(last_error) <= 500),
    delivered_at    timestamptz,
    failed_at       timestamptz,
    PRIMARY KEY (endpoint_id, event_pk),
    CHECK (delivered_at IS NULL OR failed_at IS NULL)
);
COMMENT ON TABLE webhook_deliveries IS
    'an event to send to an endpoint, and its attempts: pending until '
    'delivered (a 2xx) or failed (given up a day after the event, or its '
    'endpoint removed)';
COMMENT ON COLUMN webhook_deliveries.endpoint_id IS 'where to';
COMMENT ON COLUMN webhook_deliveries.event_pk IS 'what';
COMMENT ON COLUMN webhook_deliveries.account_id IS
    'the event''s account, '''' for none: an endpoint gets an account''s '
    'events one at a time, in order (the delivery thread sends none while '
    'an earlier one of the same account is pending)';
COMMENT ON COLUMN webhook_deliveries.attempts IS 'attempts made so far';
COMMENT ON COLUMN webhook_deliveries.next_attempt_at IS
    'when it is due (again)';
COMMENT ON COLUMN webhook_deliveries.locked_until IS
    'a meterd is sending it until then (its lease); past it, a meterd that '
    'died mid-send is presumed dead and the delivery is due again';
COMMENT ON COLUMN webhook_deliveries.last_attempt_at IS 'when last tried';
COMMENT ON COLUMN webhook_deliveries.last_status IS
    'the HTTP status of the last attempt; NULL if it got none';
COMMENT ON COLUMN webhook_deliveries.last_error IS
    'why the last attempt failed (the status, or the connection''s error)';
COMMENT ON COLUMN webhook_deliveries.delivered_at IS
    'when the endpoint accepted it (a 2xx)';
COMMENT ON COLUMN webhook_deliveries.failed_at IS 'when it was given up';

-- What the delivery thread looks for: pending deliveries by due time,
-- and an endpoint's pending ones of an account, by event.
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at)
    WHERE delivered_at IS NULL AND failed_at IS NULL;
CREATE INDEX webhook_deliveries_pending
    ON webhook_deliveries (endpoint_id, account_id, event_pk)
    WHERE delivered_at IS NULL AND failed_at IS NULL;
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_pk);

-- Endpoints are audited like keys: who registered or removed which URL
-- for which events (never the secret).
CREATE FUNCTION audit_webhook_endpoints() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM audit('webhook.create', NULL, 'webhook ' || NEW.endpoint_id,
                      jsonb_build_object('url', NEW.url,
                                         'event_types', NEW.event_types));
    ELSIF OLD.disabled_at IS NULL AND NEW.disabled_at IS NOT NULL THEN
        PERFORM audit('webhook.remove', NULL, 'webhook ' || NEW.endpoint_id,
                      jsonb_build_object('url', NEW.url));
    ELSIF row(OLD.*) IS DISTINCT FROM row(NEW.*) THEN
        -- Not what meterd or meterctl do: a change by hand.
        PERFORM audit('webhook.change', NULL, 'webhook ' || NEW.endpoint_id,
                      jsonb_build_object('url', NEW.url,
                                         'event_types', NEW.event_types,
                                         'disabled_at', NEW.disabled_at,
                                         'secret_changed',
                                         OLD.secret <> NEW.secret));
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER webhook_endpoints_audit AFTER INSERT OR UPDATE
    ON webhook_endpoints FOR EACH ROW EXECUTE FUNCTION audit_webhook_endpoints();
CREATE TRIGGER webhook_endpoints_no_truncate BEFORE TRUNCATE
    ON webhook_endpoints FOR EACH STATEMENT
    EXECUTE FUNCTION audited_no_truncate();
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION audit_webhook_endpoints() SECURITY DEFINER'
                   ' SET search_path = %I, pg_temp', current_schema());
END
$$;
COMMENT ON COLUMN audit_log.action IS
    'key.create, key.revoke, key.change, key.delete, key.scope, book.import, '
    'account.assign, account.unassign, credit.grant, usage.quarantine, '
    'invoice.finalize, credit_note.finalize, webhook.create, webhook.remove, '
    'webhook.change (and what later migrations add)';

-- meterd and meterctl: endpoints registered and disabled, never deleted
-- (the audit log and the deliveries name them); events written, and
-- deleted once old (with their deliveries); deliveries claimed and
-- recorded.
GRANT SELECT, INSERT, UPDATE ON webhook_endpoints TO meter_worker;
GRANT SELECT, INSERT, DELETE ON webhook_events TO meter_worker;
GRANT SELECT, INSERT, UPDATE, DELETE ON webhook_deliveries TO meter_worker;
