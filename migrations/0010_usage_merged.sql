-- 0010_usage_merged: the hourly rollups merged to one row per account
-- and hour, for the reports that read the fleet's usage over a month.
-- Each batch adds its own rows to usage_hourly (so that concurrent
-- batches never update a shared row, and a quarantine can set a batch's
-- rows aside): a fleet-day held 60 rows per account-hour, and summing
-- them took the fleet's reports 100 ms. A merge (meter/db/usage_merge.c,
-- which meterd runs in the background every --merge-every seconds) adds
-- the sums of rows not merged yet to usage_hourly_merged and marks them
-- merged, in one statement: every row is counted either there or as
-- itself, never both, never neither. The rows themselves stay, for the
-- quarantine, which takes a merged row's sums back out of its merged row
-- in the statement that moves it.

ALTER TABLE usage_hourly ADD COLUMN merged boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN usage_hourly.merged IS
    'its sums are counted in usage_hourly_merged (usage_hourly_totals '
    'reads it from there)';
CREATE INDEX usage_hourly_unmerged ON usage_hourly (account_pk, hour)
    WHERE NOT merged;

CREATE TABLE usage_hourly_merged (
    account_pk        integer NOT NULL REFERENCES accounts (account_pk),
    hour              integer NOT NULL,
    samples           bigint  NOT NULL CHECK (samples >= 0),
    running_s         bigint  NOT NULL CHECK (running_s >= 0),
    vcpu_s            numeric NOT NULL CHECK (vcpu_s >= 0),
    cpu_used_s        numeric NOT NULL CHECK (cpu_used_s >= 0),
    mem_byte_s        numeric NOT NULL CHECK (mem_byte_s >= 0),
    mem_used_byte_s   numeric NOT NULL CHECK (mem_used_byte_s >= 0),
    disk_byte_s       numeric NOT NULL CHECK (disk_byte_s >= 0),
    egress_bytes      numeric NOT NULL CHECK (egress_bytes >= 0),
    PRIMARY KEY (account_pk, hour)
);
-- The fleet's reports read a range of hours of every account.
CREATE INDEX usage_hourly_merged_hour ON usage_hourly_merged (hour);
COMMENT ON TABLE usage_hourly_merged IS
    'the sums of the rows of usage_hourly marked merged, per account and hour';
COMMENT ON COLUMN usage_hourly_merged.account_pk IS 'as in usage_hourly';
COMMENT ON COLUMN usage_hourly_merged.hour IS 'as in usage_hourly';
COMMENT ON COLUMN usage_hourly_merged.samples IS 'as in usage_hourly, summed';
COMMENT ON COLUMN usage_hourly_merged.running_s IS 'as in usage_hourly, summed';
COMMENT ON COLUMN usage_hourly_merged.vcpu_s IS 'as in usage_hourly, summed';
COMMENT ON COLUMN usage_hourly_merged.cpu_used_s IS 'as in usage_hourly, summed';
COMMENT ON COLUMN usage_hourly_merged.mem_byte_s IS 'as in usage_hourly, summed';
COMMENT ON COLUMN usage_hourly_merged.mem_used_byte_s IS
    'as in usage_hourly, summed';
COMMENT ON COLUMN usage_hourly_merged.disk_byte_s IS
    'as in usage_hourly, summed';
COMMENT ON COLUMN usage_hourly_merged.egress_bytes IS
    'as in usage_hourly, summed';

CREATE VIEW usage_hourly_totals AS
    SELECT account_pk, hour, samples, running_s, vcpu_s, cpu_used_s,
           mem_byte_s, mem_used_byte_s, disk_byte_s, egress_bytes
      FROM usage_hourly_merged WHERE samples > 0
    UNION ALL
    SELECT account_pk, hour, samples, running_s, vcpu_s, cpu_used_s,
           mem_byte_s, mem_used_byte_s, disk_byte_s, egress_bytes
      FROM usage_hourly WHERE NOT merged;
COMMENT ON VIEW usage_hourly_totals IS
    'rows whose sums per account and hour are those of usage_hourly, fewer '
    'of them once merged: what sums over many accounts or hours read (a '
    'merged row that a quarantine emptied is not one)';
