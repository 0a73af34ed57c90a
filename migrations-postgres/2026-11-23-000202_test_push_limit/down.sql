DROP TABLE nutrition.test_push_limit;
