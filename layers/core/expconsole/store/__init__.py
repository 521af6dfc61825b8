"""Data access: the only code that talks to DynamoDB (dynamo.py) or S3 (s3.py)."""
