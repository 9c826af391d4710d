"""Portal access codes as known answers, for tests that must not recompute the recipe they check.

Worked out once outside the application, from the contract written in
``billing.documents.portal_access_code`` (Django's ``salted_hmac`` with SHA-1: key =
SHA-1(salt + secret), code = the first ten base32 characters of HMAC-SHA1(key, "<parcel>:<owner>"),
split 5-5), with nothing but the standard library::

    python3 -c 'import hashlib, hmac, base64
    key = hashlib.sha1(b"lajas.portal-access" + b"test-only-secret-key-not-for-production-use-0123456789").digest()
    c = base64.b32encode(hmac.new(key, b"LAJ-A1:OWN-A", hashlib.sha1).digest()).decode()[:10]
    print(c[:5] + "-" + c[5:])'                                   # TTJSK-OSWWR

The receipt verification code (the QR code's, ``billing.documents.verification_code``) is Django's
``Signer`` with salt ``lajas.verify`` and separator ``.``: HMAC-SHA256 with key
SHA-256("lajas.verifysigner" + secret), urlsafe base64 without padding::

    python3 -c 'import hashlib, hmac, base64
    key = hashlib.sha256(b"lajas.verifysigner" + b"test-only-secret-key-not-for-production-use-0123456789").digest()
    print(base64.urlsafe_b64encode(hmac.new(key, b"R-LAJ-2026-2027-000001", hashlib.sha256).digest()).strip(b"="))'

The tests that use them pin ``SECRET_KEY`` to ``TEST_SECRET_KEY`` (the default of settings_test).
"""

TEST_SECRET_KEY = "test-only-secret-key-not-for-production-use-0123456789"

ACCESS_CODES = {
    ("LAJ-A1", "OWN-A"): "TTJSK-OSWWR",
    ("LAJ-A1", "OWN-B"): "6Q2EE-SZW6Y",
    ("LAJ-A2", "OWN-A"): "H3AMF-XMJKF",
    ("LAJ-B1", "OWN-B"): "7BDOH-DLAQ3",
}

VERIFICATION_CODES = {
    ("receipt", "LAJ-2026-2027-000001"): "R-LAJ-2026-2027-000001.5c2d6XJwdJaiNsccrX-fDbM5CT_LKHFlpi1hKjTn5Eo",
}
