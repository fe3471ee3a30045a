-- 0001_core: the tables that are not usage. Accounts, API keys, price
-- books and which book an account is on from which date. Per-account
-- tables are keyed by account_id first so that the schema can later be
-- sharded by account.

CREATE DOMAIN meter_id AS text
    CHECK (VALUE ~ '^[A-Za-z0-9._:-]{1,64}$');
COMMENT ON DOMAIN meter_id IS
    'identifier of an account, sandbox or price book: 1-64 of A-Za-z0-9._:-';

CREATE TABLE accounts (
    account_id  meter_id    PRIMARY KEY,
    name        text        CHECK (length(name) BETWEEN 1 AND 200),
    created_at  timestamptz NOT NULL DEFAULT now(),
    auto_created boolean    NOT NULL DEFAULT false
);
COMMENT ON TABLE accounts IS
    'customer accounts; one invoice per account and billing period';
COMMENT ON COLUMN accounts.account_id IS
    'the account_id that samples carry; never reused';
COMMENT ON COLUMN accounts.name IS
    'display name for invoices and dashboards; NULL until an admin sets it';
COMMENT ON COLUMN accounts.created_at IS
    'when the account record was created';
COMMENT ON COLUMN accounts.auto_created IS
    'true when created by the meter on a first sample rather than by an admin';

CREATE TABLE api_keys (
    key_id      bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    role        text        NOT NULL
                CHECK (role IN ('host', 'account', 'finance', 'admin')),
    account_id  meter_id    REFERENCES accounts ON DELETE RESTRICT,
    name        text        NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    token_hash  bytea       NOT NULL UNIQUE CHECK (length(token_hash) = 32),
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz,
    CHECK ((role = 'account') = (account_id IS NOT NULL)),
    CHECK (revoked_at IS NULL OR revoked_at >= created_at)
);
COMMENT ON TABLE api_keys IS
    'bearer tokens for the HTTP API; only a hash of each token is stored';
COMMENT ON COLUMN api_keys.key_id IS
    'number of the key, shown by meterctl keys list and used to revoke it';
COMMENT ON COLUMN api_keys.role IS
    'host ingests usage; account reads its own account; finance reads '
    'everything and runs invoices; admin manages keys, accounts and books';
COMMENT ON COLUMN api_keys.account_id IS
    'the account a key of role account may read; NULL for every other role';
COMMENT ON COLUMN api_keys.name IS
    'what the key is for, chosen by whoever created it';
COMMENT ON COLUMN api_keys.token_hash IS
    'SHA-256 of the token; the token itself is shown once and never stored';
COMMENT ON COLUMN api_keys.created_at IS
    'when the key was created';
COMMENT ON COLUMN api_keys.revoked_at IS
    'when the key was revoked; a revoked key authenticates nothing';
CREATE INDEX api_keys_account ON api_keys (account_id)
    WHERE account_id IS NOT NULL;

CREATE TABLE price_books (
    price_book_id  meter_id    NOT NULL,
    version        integer     NOT NULL CHECK (version > 0),
    effective_from date        NOT NULL,
    currency       char(3)     NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    book           jsonb       NOT NULL CHECK (jsonb_typeof(book) = 'object'),
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (price_book_id, version),
    CHECK (book->>'id' = price_book_id),
    CHECK (book->>'currency' = currency)
);
COMMENT ON TABLE price_books IS
    'price books, immutable once stored: a change is a new version';
COMMENT ON COLUMN price_books.price_book_id IS
    'the book''s id, as in its JSON';
COMMENT ON COLUMN price_books.version IS
    'version of the book, from 1; each version is a separate, final row';
COMMENT ON COLUMN price_books.effective_from IS
    'first day (UTC) on which this version may be used';
COMMENT ON COLUMN price_books.currency IS
    'ISO 4217 code of every amount in the book';
COMMENT ON COLUMN price_books.book IS
    'the book in the JSON format of docs/pricing.md, amounts as strings';
COMMENT ON COLUMN price_books.created_at IS
    'when this version was stored';

CREATE FUNCTION price_books_immutable() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'price book % version % is immutable; store a new version',
        OLD.price_book_id, OLD.version
        USING ERRCODE = 'integrity_constraint_violation';
END
$$;
COMMENT ON FUNCTION price_books_immutable() IS
    'refuses UPDATE and DELETE of price_books';
CREATE TRIGGER price_books_immutable
    BEFORE UPDATE OR DELETE ON price_books
    FOR EACH ROW EXECUTE FUNCTION price_books_immutable();

CREATE TABLE account_price_books (
    account_id     meter_id    NOT NULL REFERENCES accounts ON DELETE RESTRICT,
    valid_from     date        NOT NULL,
    price_book_id  meter_id    NOT NULL,
    version        integer     NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, valid_from),
    FOREIGN KEY (price_book_id, version)
        REFERENCES price_books ON DELETE RESTRICT
);
COMMENT ON TABLE account_price_books IS
    'which price book an account is on: each row holds from valid_from '
    'until the next row of the same account';
COMMENT ON COLUMN account_price_books.account_id IS
    'the account';
COMMENT ON COLUMN account_price_books.valid_from IS
    'first day (UTC) on this book';
COMMENT ON COLUMN account_price_books.price_book_id IS
    'the book';
COMMENT ON COLUMN account_price_books.version IS
    'the version of the book';
COMMENT ON COLUMN account_price_books.created_at IS
    'when the assignment was recorded';
CREATE INDEX account_price_books_book
    ON account_price_books (price_book_id, version);

CREATE FUNCTION account_price_books_check() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    effective date;
BEGIN
    SELECT effective_from INTO effective FROM price_books
     WHERE price_book_id = NEW.price_book_id AND version = NEW.version;
    IF NEW.valid_from < effective THEN
        RAISE EXCEPTION 'account % cannot be on price book % version % from %: '
            'the book is effective from %', NEW.account_id,
            NEW.price_book_id, NEW.version, NEW.valid_from, effective
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION account_price_books_check() IS
    'refuses an assignment that starts before its book is effective';
CREATE TRIGGER account_price_books_check
    BEFORE INSERT OR UPDATE ON account_price_books
    FOR EACH ROW EXECUTE FUNCTION account_price_books_check();
