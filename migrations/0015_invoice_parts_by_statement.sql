-- 0015_invoice_parts_by_statement: the invoice run writes a batch's
-- lines, usage counts and revenue rows with one COPY each, and replaces a
-- batch's drafts with one DELETE each: the check that no part of a final
-- document changes runs once a statement, over the rows it changed (a
-- join with invoices), instead of once a row. Same rule, same message.

DROP TRIGGER invoice_lines_immutable ON invoice_lines;
DROP TRIGGER invoice_usage_immutable ON invoice_usage;
DROP TRIGGER invoice_revenue_immutable ON invoice_revenue;
DROP FUNCTION invoice_parts_immutable();

CREATE FUNCTION invoice_parts_immutable() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- One probe of the primary key a document the statement touched.
    IF EXISTS (SELECT 1 FROM (SELECT DISTINCT account_id, invoice_id
                                FROM changed) c
                CROSS JOIN LATERAL (SELECT 1 FROM invoices i
                 WHERE i.account_id = c.account_id
                   AND i.invoice_id = c.invoice_id
                   AND i.status = 'final' LIMIT 1) f) THEN
        RAISE EXCEPTION 'the % of a final invoice never change', TG_TABLE_NAME
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION invoice_parts_immutable() IS
    'refuses a statement that changes lines, usage counts or revenue rows '
    'of a final document (changed: the rows before or after it)';

CREATE TRIGGER invoice_lines_immutable_new AFTER INSERT ON invoice_lines
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION invoice_parts_immutable();
CREATE TRIGGER invoice_lines_immutable_old AFTER DELETE ON invoice_lines
    REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION invoice_parts_immutable();
CREATE TRIGGER invoice_lines_immutable_upd AFTER UPDATE ON invoice_lines
    REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION invoice_parts_immutable();
CREATE TRIGGER invoice_lines_immutable_upd_new AFTER UPDATE ON invoice_lines
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION invoice_parts_immutable();

CREATE TRIGGER invoice_usage_immutable_new AFTER INSERT ON invoice_usage
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION invoice_parts_immutable();
CREATE TRIGGER invoice_usage_immutable_old AFTER DELETE ON invoice_usage
    REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION invoice_parts_immutable();
CREATE TRIGGER invoice_usage_immutable_upd AFTER UPDATE ON invoice_usage
    REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION invoice_parts_immutable();
CREATE TRIGGER invoice_usage_immutable_upd_new AFTER UPDATE ON invoice_usage
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION invoice_parts_immutable();

CREATE TRIGGER invoice_revenue_immutable_new AFTER INSERT ON invoice_revenue
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION invoice_parts_immutable();
CREATE TRIGGER invoice_revenue_immutable_old AFTER DELETE ON invoice_revenue
    REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION invoice_parts_immutable();
CREATE TRIGGER invoice_revenue_immutable_upd AFTER UPDATE ON invoice_revenue
    REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION invoice_parts_immutable();
CREATE TRIGGER invoice_revenue_immutable_upd_new AFTER UPDATE ON invoice_revenue
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION invoice_parts_immutable();
