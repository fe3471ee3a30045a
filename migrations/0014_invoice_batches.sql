-- 0014_invoice_batches: the invoice run finalizes a batch of accounts in
-- one transaction, so it takes the batch's numbers at once: the year's
-- counter advances by the batch's count, not by one. Numbers stay
-- gap-free and never given twice: a document is finalized only with a
-- number the counter has passed, numbers are unique, and at commit every
-- number an advance took must be on a document (a deferred check over
-- the advance's range, which costs the batch, not the year).

CREATE OR REPLACE FUNCTION invoice_numbers_gap_free() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.last < 1 THEN
            RAISE EXCEPTION 'invoice numbers of % start at 1', NEW.year
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
        RETURN NEW;
    END IF;
    IF TG_OP = 'DELETE' OR NEW.year <> OLD.year OR NEW.last <= OLD.last THEN
        RAISE EXCEPTION 'invoice numbers of % only ever advance', OLD.year
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION invoice_numbers_gap_free() IS
    'refuses any change to invoice_numbers but starting a year and '
    'advancing its last number';

CREATE FUNCTION invoice_numbers_given() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    first integer := CASE WHEN TG_OP = 'INSERT' THEN 1 ELSE OLD.last + 1 END;
    given bigint;
BEGIN
    SELECT count(*) INTO given FROM invoices
     WHERE number BETWEEN to_char(NEW.year, 'FM0000') || '-'
                          || to_char(first, 'FM000000')
                      AND to_char(NEW.year, 'FM0000') || '-'
                          || to_char(NEW.last, 'FM000000');
    IF given <> NEW.last - first + 1 THEN
        RAISE EXCEPTION 'invoice numbers % to % of % are not all given',
            first, NEW.last, NEW.year
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION invoice_numbers_given() IS
    'at commit: every number an advance of invoice_numbers took is on a '
    'document';
CREATE CONSTRAINT TRIGGER invoice_numbers_given
    AFTER INSERT OR UPDATE ON invoice_numbers
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION invoice_numbers_given();

-- Finalizing: the number is one the counter has passed (the deferred
-- check above makes sure none it passed is left out).
CREATE OR REPLACE FUNCTION invoices_immutable() RETURNS trigger
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
    IF NEW.status = 'final' AND NOT EXISTS (
        SELECT 1 FROM invoice_numbers n
         WHERE n.year = split_part(NEW.number, '-', 1)::int
           AND n.last >= split_part(NEW.number, '-', 2)::int) THEN
        RAISE EXCEPTION 'invoice number % has not been taken', NEW.number
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END
$$;
