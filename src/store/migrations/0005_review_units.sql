-- Reviews are metered apart from items (the places scraper bills places and delivered reviews
-- separately, with their own monthly quota). A run reserves review units beside its item units and is
-- billed for both in the transaction that finishes it; usage rows count both per kind.
-- NULL = the deployment's [scrapers] free_reviews_per_month.
ALTER TABLE workspaces ADD COLUMN monthly_review_quota INTEGER CHECK (monthly_review_quota IS NULL OR monthly_review_quota >= 0);
ALTER TABLE scrape_runs ADD COLUMN reserved_reviews INTEGER NOT NULL DEFAULT 0 CHECK (reserved_reviews >= 0);
ALTER TABLE scrape_runs ADD COLUMN billed_reviews INTEGER NOT NULL DEFAULT 0 CHECK (billed_reviews >= 0);
ALTER TABLE usage_monthly ADD COLUMN review_units INTEGER NOT NULL DEFAULT 0 CHECK (review_units >= 0);
