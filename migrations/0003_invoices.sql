-- 0003_invoices: invoices and credit notes, their lines, and the
-- gap-free numbering; the first running minute of each sandbox, which
-- the invoice run needs to count runs without reading all history.
-- docs/invoicing.md explains the lifecycle and the late-usage rule.

ALTER TABLE sandboxes ADD COLUMN first_running_minute integer;
COMMENT ON COLUMN sandboxes.first_running_minute IS
    'Unix minute of the earliest running second stored, NULL while none: '
    'a sandbox counts as a run in the period of this minute. Kept by '
    'ingestion, which only ever lowers it (samples stored before this '
    'migration are not counted: no deployment had any)';

CREATE TABLE invoice_numbers (
    year  integer NOT NULL PRIMARY KEY CHECK (year BETWEEN 1970 AND 9999),
    last  integer NOT NULL CHECK (last BETWEEN 1 AND 999999)
);
COMMENT ON TABLE invoice_numbers IS
    'the last number given in each year; finalizing takes the next one in '
    'its own transaction, whose row lock makes numbers gap-free. The one '
    'table shared by all accounts (a legal sequence cannot be sharded)';

COMMENT ON COLUMN invoice_numbers.year IS 'the year of finalization (UTC)';
COMMENT ON COLUMN invoice_numbers.last IS 'the last number given that year';

CREATE TABLE invoices (
    account_id   meter_id    NOT NULL REFERENCES accounts ON DELETE RESTRICT,
    invoice_id   bigint      GENERATED ALWAYS AS IDENTITY UNIQUE,
    kind         text        NOT NULL CHECK (kind IN ('invoice', 'credit_note')),
    period       date        NOT NULL
                 CHECK (period = date_trunc('month', period)::date),
    status       text        NOT NULL CHECK (status IN ('draft', 'final')),
    number       text        UNIQUE CHECK (number ~ '^[0-9]{4}-[0-9]{6}$'),
    currency     char(3)     NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    total        numeric     NOT NULL,
    seller       text        NOT NULL CHECK (length(seller) BETWEEN 1 AND 200),
    account_name text,
    voids        bigint,
    reason       text        CHECK (length(reason) BETWEEN 1 AND 500),
    sha256       bytea       CHECK (length(sha256) = 32),
    created_at   timestamptz NOT NULL DEFAULT now(),
    finalized_at timestamptz,
    PRIMARY KEY (account_id, invoice_id),
    FOREIGN KEY (account_id, voids) REFERENCES invoices (account_id, invoice_id),
    CHECK ((status = 'final') =
           (number IS NOT NULL AND sha256 IS NOT NULL AND finalized_at IS NOT NULL)),
    CHECK ((kind = 'credit_note') = (voids IS NOT NULL)),
    CHECK ((kind = 'credit_note') = (reason IS NOT NULL))
);
COMMENT ON TABLE invoices IS
    'invoices and credit notes of an account: drafts until finalized, then '
    'immutable (a trigger refuses every change); a credit note voids one '
    'final invoice of the same account';
COMMENT ON COLUMN invoices.account_id IS 'the account billed';
COMMENT ON COLUMN invoices.invoice_id IS
    'the document''s id, kept from draft to final; how a draft is named';
COMMENT ON COLUMN invoices.kind IS
    'invoice, or credit_note (the negated lines of the invoice it voids)';
COMMENT ON COLUMN invoices.period IS 'first day of the billed month (UTC)';
COMMENT ON COLUMN invoices.status IS
    'draft (replaced by every run) or final (immutable); an invoice that a '
    'credit note references is shown as void';
COMMENT ON COLUMN invoices.number IS
    'YYYY-NNNNNN, gap-free within the year of finalization';
COMMENT ON COLUMN invoices.currency IS 'ISO 4217 code of every amount';
COMMENT ON COLUMN invoices.total IS
    'the sum of the lines, rounded to the currency''s minor unit';
COMMENT ON COLUMN invoices.seller IS 'who issues the document';
COMMENT ON COLUMN invoices.account_name IS 'the account''s name when issued';
COMMENT ON COLUMN invoices.voids IS 'credit note: invoice_id it voids';
COMMENT ON COLUMN invoices.reason IS 'credit note: why the invoice is void';
COMMENT ON COLUMN invoices.sha256 IS
    'SHA-256 of the document''s canonical JSON at finalization';
COMMENT ON COLUMN invoices.created_at IS 'when the draft was last computed';
COMMENT ON COLUMN invoices.finalized_at IS 'when it was finalized (issued)';
CREATE UNIQUE INDEX invoices_one_draft ON invoices (account_id, period)
    WHERE status = 'draft' AND kind = 'invoice';
CREATE UNIQUE INDEX invoices_void_once ON invoices (account_id, voids)
    WHERE voids IS NOT NULL;
CREATE INDEX invoices_period ON invoices (period, account_id);

CREATE TABLE invoice_lines (
    account_id    meter_id NOT NULL,
    invoice_id    bigint   NOT NULL,
    line_no       integer  NOT NULL CHECK (line_no > 0),
    kind          text     NOT NULL CHECK (kind ~ '^[a-z_]{1,32}$'),
    corrects      text     CHECK (corrects ~ '^[a-z_]{1,32}$'),
    period        date     NOT NULL
                  CHECK (period = date_trunc('month', period)::date),
    price_book_id meter_id,
    version       integer,
    description   text     NOT NULL,
    quantity      numeric,
    unit          text,
    unit_price    numeric,
    amount        numeric  NOT NULL,
    PRIMARY KEY (account_id, invoice_id, line_no),
    FOREIGN KEY (account_id, invoice_id) REFERENCES invoices ON DELETE CASCADE,
    FOREIGN KEY (price_book_id, version) REFERENCES price_books,
    CHECK ((kind = 'late_usage') = (corrects IS NOT NULL)),
    CHECK ((quantity IS NULL) = (unit IS NULL))
);
COMMENT ON TABLE invoice_lines IS
    'the lines of invoices and credit notes, in order';
COMMENT ON COLUMN invoice_lines.account_id IS 'the document''s account';
COMMENT ON COLUMN invoice_lines.invoice_id IS 'the document';
COMMENT ON COLUMN invoice_lines.line_no IS 'position of the line, from 1';
COMMENT ON COLUMN invoice_lines.version IS 'the version of price_book_id';
COMMENT ON COLUMN invoice_lines.description IS 'what the line bills, for people';
COMMENT ON COLUMN invoice_lines.unit IS 'unit of quantity (vCPU-second, GiB-month, run, ...)';
COMMENT ON COLUMN invoice_lines.kind IS
    'cpu, memory, storage, egress, runs, autopause_credit, subscription, '
    'included_credit, promotional_credit, minimum_commit, late_usage';
COMMENT ON COLUMN invoice_lines.corrects IS
    'late_usage: the kind of line whose amount it corrects';
COMMENT ON COLUMN invoice_lines.period IS
    'the period whose usage the line bills: the invoice''s own, or an '
    'earlier one for late_usage';
COMMENT ON COLUMN invoice_lines.price_book_id IS
    'the book that priced the line (with version)';
COMMENT ON COLUMN invoice_lines.quantity IS 'in display units, 6 decimals';
COMMENT ON COLUMN invoice_lines.unit_price IS 'set when one rate applies';
COMMENT ON COLUMN invoice_lines.amount IS 'exact to 6 decimals';

CREATE TABLE invoice_usage (
    account_id  meter_id NOT NULL,
    invoice_id  bigint   NOT NULL,
    period      date     NOT NULL
                CHECK (period = date_trunc('month', period)::date),
    samples     bigint   CHECK (samples >= 0),
    first_runs  bigint   CHECK (first_runs >= 0),
    seq         bigint   GENERATED ALWAYS AS IDENTITY,
    PRIMARY KEY (account_id, invoice_id, period),
    FOREIGN KEY (account_id, invoice_id) REFERENCES invoices ON DELETE CASCADE,
    CHECK ((samples IS NULL) = (first_runs IS NULL))
);
COMMENT ON TABLE invoice_usage IS
    'what a document did to the billing of a period: an invoice rated it '
    '(how many stored seconds and first runs it saw: more seconds stored '
    'since, or other first runs, mean late usage to bill), or a credit '
    'note took back lines of it (which asks for it to be rated again)';
COMMENT ON COLUMN invoice_usage.account_id IS 'the document''s account';
COMMENT ON COLUMN invoice_usage.invoice_id IS 'the document';
COMMENT ON COLUMN invoice_usage.period IS 'a period whose billing it changed';
COMMENT ON COLUMN invoice_usage.samples IS
    'stored seconds of that period it rated; NULL for a credit note';
COMMENT ON COLUMN invoice_usage.first_runs IS
    'sandboxes whose first running minute was in that period, counted '
    'before it read the usage (late samples can move a first run '
    'earlier); NULL for a credit note';
COMMENT ON COLUMN invoice_usage.seq IS
    'order of the rows: an account''s documents are written one at a time '
    '(its row is locked), so the highest seq of a period is the latest';

CREATE FUNCTION invoices_immutable() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.status <> 'draft' THEN
            RAISE EXCEPTION 'a document is created as a draft, then finalized'
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
        RETURN NEW;
    END IF;
    IF OLD.status = 'final' THEN
        RAISE EXCEPTION '% % of account % is final and never changes; '
            'void it with a credit note (meterctl invoice void)',
            replace(OLD.kind, '_', ' '), OLD.number, OLD.account_id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    -- Finalizing: the number is the one just taken from invoice_numbers.
    IF NEW.status = 'final' AND NOT EXISTS (
        SELECT 1 FROM invoice_numbers n
         WHERE n.year = split_part(NEW.number, '-', 1)::int
           AND n.last = split_part(NEW.number, '-', 2)::int) THEN
        RAISE EXCEPTION 'invoice number % is not the next of its year', NEW.number
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION invoices_immutable() IS
    'documents are inserted as drafts, finalized with the number just '
    'taken, and never changed or deleted once final';
CREATE TRIGGER invoices_immutable
    BEFORE INSERT OR UPDATE OR DELETE ON invoices
    FOR EACH ROW EXECUTE FUNCTION invoices_immutable();

-- Lines and usage counts belong to their document: writable while it is
-- a draft, never once it is final.
CREATE FUNCTION invoice_is_final(account meter_id, id bigint) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1 FROM invoices i
                    WHERE i.account_id = account AND i.invoice_id = id
                      AND i.status = 'final')
$$;
COMMENT ON FUNCTION invoice_is_final(meter_id, bigint) IS
    'whether document id of the account is final';

CREATE FUNCTION invoice_parts_immutable() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF (TG_OP <> 'INSERT' AND invoice_is_final(OLD.account_id, OLD.invoice_id))
       OR (TG_OP <> 'DELETE' AND invoice_is_final(NEW.account_id, NEW.invoice_id))
    THEN
        RAISE EXCEPTION 'the % of a final invoice never change', TG_TABLE_NAME
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION invoice_parts_immutable() IS
    'refuses changes to the lines and usage counts of a final document';
CREATE TRIGGER invoice_lines_immutable
    BEFORE INSERT OR UPDATE OR DELETE ON invoice_lines
    FOR EACH ROW EXECUTE FUNCTION invoice_parts_immutable();
CREATE TRIGGER invoice_usage_immutable
    BEFORE INSERT OR UPDATE OR DELETE ON invoice_usage
    FOR EACH ROW EXECUTE FUNCTION invoice_parts_immutable();

CREATE FUNCTION invoice_numbers_gap_free() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.last <> 1 THEN
            RAISE EXCEPTION 'invoice numbers of % start at 1', NEW.year
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
        RETURN NEW;
    END IF;
    IF TG_OP = 'DELETE' OR NEW.year <> OLD.year OR NEW.last <> OLD.last + 1 THEN
        RAISE EXCEPTION 'invoice numbers of % only ever advance by one', OLD.year
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION invoice_numbers_gap_free() IS
    'refuses any change to invoice_numbers but starting a year at 1 and '
    'taking the next number';
CREATE TRIGGER invoice_numbers_gap_free
    BEFORE INSERT OR UPDATE OR DELETE ON invoice_numbers
    FOR EACH ROW EXECUTE FUNCTION invoice_numbers_gap_free();

CREATE FUNCTION invoices_no_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'invoices are never truncated'
        USING ERRCODE = 'integrity_constraint_violation';
END
$$;
COMMENT ON FUNCTION invoices_no_truncate() IS
    'refuses TRUNCATE of the invoice tables';
CREATE TRIGGER invoices_no_truncate BEFORE TRUNCATE ON invoices
    FOR EACH STATEMENT EXECUTE FUNCTION invoices_no_truncate();
CREATE TRIGGER invoice_lines_no_truncate BEFORE TRUNCATE ON invoice_lines
    FOR EACH STATEMENT EXECUTE FUNCTION invoices_no_truncate();
CREATE TRIGGER invoice_usage_no_truncate BEFORE TRUNCATE ON invoice_usage
    FOR EACH STATEMENT EXECUTE FUNCTION invoices_no_truncate();
CREATE TRIGGER invoice_numbers_no_truncate BEFORE TRUNCATE ON invoice_numbers
    FOR EACH STATEMENT EXECUTE FUNCTION invoices_no_truncate();

-- A final invoice was priced with the books of its period: a change to
-- those assignments would make late usage bill the change itself.
CREATE FUNCTION account_price_books_settled() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- The assignment as it was (not on INSERT) and as it will be (not on
    -- DELETE) must both lie after the account's last final invoice.
    IF (TG_OP <> 'INSERT' AND EXISTS (
            SELECT 1 FROM invoices i
             WHERE i.account_id = OLD.account_id AND i.status = 'final'
               AND i.period >= date_trunc('month', OLD.valid_from)::date))
       OR (TG_OP <> 'DELETE' AND EXISTS (
            SELECT 1 FROM invoices i
             WHERE i.account_id = NEW.account_id AND i.status = 'final'
               AND i.period >= date_trunc('month', NEW.valid_from)::date))
    THEN
        RAISE EXCEPTION 'account %: the price books of invoiced periods are '
            'settled; change them from a later period',
            CASE WHEN TG_OP = 'DELETE' THEN OLD.account_id ELSE NEW.account_id END
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION account_price_books_settled() IS
    'refuses a change of price book in or before an invoiced period';
CREATE TRIGGER account_price_books_settled
    BEFORE INSERT OR UPDATE OR DELETE ON account_price_books
    FOR EACH ROW EXECUTE FUNCTION account_price_books_settled();
