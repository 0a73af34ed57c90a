DROP TRIGGER IF EXISTS activation_seat_released;
DROP TRIGGER IF EXISTS activation_seat_taken;
ALTER TABLE licence DROP COLUMN seats;
