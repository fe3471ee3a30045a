-- 0025_webhook_claims: a claim (meter/db/webhooks.c) finds the due
-- deliveries in the order it sends them, by (next_attempt_at, event_pk),
-- and stops at the first few that head their account's queue. On an
-- index of next_attempt_at alone it sorted every pending delivery
-- first: with 100,000 waiting, a claim of ten took half a second, and
-- meterd delivered 13 a second (bench/ingest_bench, (d)).
DROP INDEX webhook_deliveries_due;
CREATE INDEX webhook_deliveries_due
    ON webhook_deliveries (next_attempt_at, event_pk)
    WHERE delivered_at IS NULL AND failed_at IS NULL;
