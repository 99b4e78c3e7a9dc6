-- An account that leaves after paying for something is anonymised, not
-- deleted (issue 57): its payments, refunds and orders stay for the books,
-- pointing at a person with no name, address or password. Every read of an
-- account skips such a row.
ALTER TABLE users ADD COLUMN deleted_at DATETIME(6) NULL;
