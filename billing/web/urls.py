"""Every page of billing, one list per namespace; ``lajas_portal/urls.py`` mounts each under its
prefix with ``include((patterns, namespace))``. Paths and names are the ones the pages always had."""

from django.urls import path

from levy.urls import FiscalYearConverter  # noqa: F401  (registers the ``fiscal_year`` converter)

from . import bank, books, counter, hacienda, home, journal, mailing, offices, portal, public, registers, roll, verify

home_page = home.home

# /colecturia/ (namespace ``billing``): the Collector's office
counter_patterns = [
    path("", counter.counter, name="counter"),
    path("predio/<int:pk>/", counter.counter_parcel, name="counter-parcel"),
    path("predio/<int:pk>/estado/", counter.statement, name="statement"),
    path("predio/<int:pk>/libro/", counter.ledger, name="ledger"),
    path("recibo/<int:pk>/", counter.receipt, name="receipt"),
    path("recibo/<int:pk>/pdf/", counter.receipt_pdf, name="receipt-pdf"),
    path("documento/<int:pk>/pdf/", counter.document_pdf, name="document-pdf"),
    path("pago/<int:pk>/anular/", counter.void, name="void"),
    path("cuadre/", counter.day_report, name="day-report"),
    path("cuadre/cerrar/", counter.day_close, name="day-close"),
    path("sesion/seguir/", counter.session_extend, name="session-extend"),
    path("predio/<int:pk>/reembolso/", counter.refund, name="refund"),
    path("reembolsos/", counter.refund_requests, name="refund-requests"),
    path("reembolsos/<int:pk>/decidir/", counter.refund_decide, name="refund-decide"),
]

# /cobros/ (namespace ``collections``): Hacienda's and the Authority's collection pages
collections_patterns = [
    path("morosos/", hacienda.delinquent, name="delinquent"),
    path("predio/<int:pk>/embargo/", hacienda.seizure, name="seizure"),
    path("embargo/paso/<int:pk>/pdf/", hacienda.seizure_pdf, name="seizure-pdf"),
    path("predio/<int:pk>/certificaciones/", hacienda.certificates, name="certificates"),
    path("certificacion/<int:pk>/pdf/", hacienda.certificate_pdf, name="certificate-pdf"),
    path("resumen/", hacienda.dashboard, name="dashboard"),
    path("agua/", hacienda.water, name="water"),
    path("agua/importar/", hacienda.water_import, name="water-import"),
    path("agua/facturar/", hacienda.water_bill, name="water-bill"),
    path("cierres/", hacienda.closures, name="closures"),
    path("oficinas/", offices.office_list, name="offices"),
    path("oficinas/<str:code>/", offices.office_edit, name="office-edit"),
    path("banco/", bank.bank_files, name="bank-files"),
    path("banco/confirmar/", bank.bank_file_confirm, name="bank-file-confirm"),
    path("banco/archivo/<int:pk>/", bank.bank_file, name="bank-file"),
    path("banco/excepciones/", bank.bank_exceptions, name="bank-exceptions"),
    path("avisos/", hacienda.bill_batches, name="bill-batches"),
    path("avisos/<int:pk>/", hacienda.bill_batch, name="bill-batch"),
    path("avisos/<int:pk>/parte/<int:index>/", hacienda.bill_batch_part, name="bill-batch-part"),
    path("diario/", journal.journals, name="journals"),  # issue 19: the fund journal
    path("avisos/<int:pk>/correo/<str:what>.csv", mailing.batch_mailing_list, name="bill-batch-mailing"),
    path("correo-devuelto/", mailing.returned_mail, name="returned-mail"),
]

# /portal/ (namespace ``portal``): the landowner portal
portal_patterns = [
    path("crear-cuenta/", portal.claim, name="claim"),
    path("invitar/", portal.invite, name="invite"),
    path("plazo/<int:pk>/aviso/", portal.installment_bill, name="installment-bill"),
    path("predio/<int:pk>/estado-de-cuenta/", portal.statement_pdf, name="statement-pdf"),
    path("embargo/<int:pk>/pdf/", portal.seizure_pdf, name="seizure-pdf"),
    path("activar/<uidb64>/<token>/", portal.ActivateView.as_view(), name="activate"),
    path("entrega/", mailing.delivery, name="delivery"),
    path("entrega/confirmar/<str:token>/", mailing.email_confirm, name="email-confirm"),
]

# /cuanto-debo/ (namespace ``owed``): the public lookup
owed_patterns = [
    path("", public.owed, name="lookup"),
]

# /verificar/ (namespace ``verify``): the public verification of issued documents
verify_patterns = [
    path("clave-publica/", verify.public_key, name="public-key"),  # a verification code always holds a "."
    path("<str:code>/", verify.document, name="document"),
]

# /auditoria/libros/ (namespace ``books``): the recorded checks of the books
books_patterns = [
    path("", books.checks, name="checks"),
]

# /auditoria/registros/ (namespace ``registers``): the registers for auditors (issue 19)
registers_patterns = [
    path("", registers.register, name="register"),
]

# /contribucion/ (joined to levy's own pages in the ``levy`` namespace): the roll's finalization
# and corrections, billing's since they create charges; levy imports nothing of billing.
roll_patterns = [
    path("<fiscal_year:year>/finalizar/", roll.finalize, name="finalize"),
    path("<fiscal_year:year>/correcciones/", roll.corrections, name="corrections"),
]
