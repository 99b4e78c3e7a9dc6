-- A concert with prices holds a won order while its fan pays (issue 57):
-- one that confirmed at once sold its seats for nothing. Those made before
-- take the default a priced concert gets now, 15 minutes.
UPDATE concerts c SET c.hold_seconds = 900
 WHERE c.hold_seconds = 0
   AND EXISTS (SELECT 1 FROM price_categories p WHERE p.concert_id = c.id AND p.price > 0);
