-- 0008_revenue: what finance's dashboards read. Each document (draft,
-- final invoice, credit note) spreads its total over the days whose
-- usage it bills, by price book and by kind of charge, in the currency's
-- minor unit: the rows of a document sum to its total exactly, so
-- revenue by day, by book or by pricing model always adds up to the
-- invoices. Written with the document's lines, in the same transaction,
-- and as immutable once it is final. The rule that spreads them is in
-- meter/db/revenue.c (docs/dashboards.md).

CREATE TABLE invoice_revenue (
    account_id    meter_id NOT NULL,
    invoice_id    bigint   NOT NULL,
    day           date     NOT NULL,
    kind          text     NOT NULL CHECK (kind ~ '^[a-z_]{1,32}$'),
    price_book_id meter_id,
    version       integer,
    amount        numeric  NOT NULL,
    FOREIGN KEY (account_id, invoice_id) REFERENCES invoices ON DELETE CASCADE,
    FOREIGN KEY (price_book_id, version) REFERENCES price_books,
    CHECK ((price_book_id IS NULL) = (version IS NULL))
);
COMMENT ON TABLE invoice_revenue IS
    'a document''s total spread over the days it bills, by book and kind '
    'of charge; the rows of a document sum to its total';
COMMENT ON COLUMN invoice_revenue.account_id IS 'the document''s account';
COMMENT ON COLUMN invoice_revenue.invoice_id IS 'the document';
COMMENT ON COLUMN invoice_revenue.day IS
    'a day (UTC) of the period whose usage the amount bills';
COMMENT ON COLUMN invoice_revenue.kind IS
    'the kind of the lines it comes from (for late_usage, the kind it '
    'corrects): cpu, memory, instance, storage, egress, runs, '
    'autopause_credit, subscription, minimum_commit, included_credit, '
    'promotional_credit, credit_grant';
COMMENT ON COLUMN invoice_revenue.price_book_id IS
    'the book that priced those lines; NULL for an operator''s grant';
COMMENT ON COLUMN invoice_revenue.version IS 'the version of price_book_id';
COMMENT ON COLUMN invoice_revenue.amount IS
    'in the currency''s minor unit (cents for USD); negative for credits';
CREATE INDEX invoice_revenue_doc ON invoice_revenue (account_id, invoice_id);
CREATE INDEX invoice_revenue_day ON invoice_revenue (day);
CREATE TRIGGER invoice_revenue_immutable
    BEFORE INSERT OR UPDATE OR DELETE ON invoice_revenue
    FOR EACH ROW EXECUTE FUNCTION invoice_parts_immutable();

ALTER TABLE invoice_usage ADD COLUMN running_s bigint
    CHECK (running_s >= 0);
ALTER TABLE invoice_usage ADD COLUMN idle_s bigint
    CHECK (idle_s >= 0 AND idle_s <= running_s);
COMMENT ON COLUMN invoice_usage.running_s IS
    'running seconds of the period the document rated (NULL for a credit '
    'note, and for documents stored before 0008)';
COMMENT ON COLUMN invoice_usage.idle_s IS
    'of those, the idle seconds the autopause rule credited back';

-- The pricing model of a charge, for revenue by model: the market's
-- dimensions (DOMAIN.md), from the kind of line and its book's billing
-- granularity.
CREATE FUNCTION pricing_model(kind text, granularity_s integer)
RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN kind IN ('cpu', 'memory', 'instance') THEN
            CASE WHEN coalesce(granularity_s, 1) <= 1 THEN 'per-second'
                 WHEN granularity_s = 60 THEN 'per-minute'
                 ELSE 'per-' || granularity_s || '-seconds' END
        WHEN kind = 'runs' THEN 'per-run'
        WHEN kind = 'storage' THEN 'storage'
        WHEN kind = 'egress' THEN 'egress'
        WHEN kind IN ('subscription', 'minimum_commit') THEN 'subscription'
        WHEN kind = 'autopause_credit' THEN 'autopause credit'
        ELSE 'credits'
    END
$$;
COMMENT ON FUNCTION pricing_model(text, integer) IS
    'the pricing model a charge of this kind belongs to, under a book '
    'billing by granularity_s seconds';

-- The overview's samples ingested per minute reads the rollups by
-- arrival.
CREATE INDEX usage_hourly_added ON usage_hourly (added_at);
