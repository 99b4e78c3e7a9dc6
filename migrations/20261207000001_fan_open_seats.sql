-- A fan's open seats in one concert, found without reading the user's open
-- seats in every other concert: (user, open seat) stays unique, for a seat
-- belongs to one concert, and the same index now answers "this fan's open
-- seats" (the enqueue's read-back, the decision's fans) in a range as short
-- as the fan's cap, whatever the user has open elsewhere.
ALTER TABLE request_seats
    DROP INDEX uq_request_seats_open,
    ADD CONSTRAINT uq_request_seats_open UNIQUE (user_id, concert_id, open_seat_id);
