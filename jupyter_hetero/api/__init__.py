"""The REST API's shapes in one place: response models, the route table, and the OpenAPI document built from them."""
