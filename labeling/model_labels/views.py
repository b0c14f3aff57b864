"""The model labels page of a golden set: which models labelled its pairs, and, for the one
chosen (model and prompt hash), how far its labels agree with people's, per query slice,
the worst disagreements to look at, and the runs ranked on human labels beside human labels
with the model's filling the gaps (labeling.model_labels.selectors.calibration_report).

Managers and adjudicators read it (staff too); annotators judge blind and must not see a
model's grades, so the page is a 404 to them, as to a stranger. Read only.
"""

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from goldenset.models import Membership
from goldenset.selectors import access_golden_set
from labeling.model_labels.selectors import calibration_report, source_find

MODEL_LABEL_ROLES = (Membership.Role.MANAGER, Membership.Role.ADJUDICATOR)


@login_required
@require_GET
def model_labels_page(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = access_golden_set(request.user, slug, roles=MODEL_LABEL_ROLES)
    sources, source = source_find(golden_set, request.GET.get("model"), request.GET.get("prompt"))
    if source is None and request.GET.get("model"):
        raise Http404("no labels of that model and prompt in this golden set")
    report = calibration_report(golden_set, source) if source is not None else None
    return render(request, "labeling/model_labels/page.html", {"golden_set": golden_set, "sources": sources, "report": report})
