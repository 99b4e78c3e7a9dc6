-- The most a BOX_OFFICE member may give back in one refund at the desk,
-- in the concert currency's minor units, as the organizer's owner sets it
-- (issue 60). NULL: no limit set.
ALTER TABLE organizers ADD COLUMN desk_refund_limit BIGINT UNSIGNED NULL;
