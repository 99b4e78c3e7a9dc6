-- A user's language (issue 48): the one the page speaks for them, kept on
-- the account so that the mail the box office sends them is written in
-- it. Accounts made before it read English, as their mail was.
ALTER TABLE users
    ADD COLUMN language VARCHAR(8) NOT NULL DEFAULT 'en';
