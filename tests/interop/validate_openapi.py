"""Validates websearchd's /openapi.json with openapi-spec-validator (OpenAPI 3.1, its JSON Schema dialect included).

Usage: python validate_openapi.py BASE_URL...   (prints one line per document; exits non-zero on the first invalid one)
"""

import json
import sys
import urllib.request

from openapi_spec_validator import OpenAPIV31SpecValidator, validate


def main():
    for base in sys.argv[1:]:
        with urllib.request.urlopen(base.rstrip("/") + "/openapi.json", timeout=30) as r:
            document = json.loads(r.read())
        validate(document, cls=OpenAPIV31SpecValidator)
        print(f"openapi-spec-validator: valid OpenAPI {document['openapi']}, {len(document['paths'])} paths")


if __name__ == "__main__":
    main()
