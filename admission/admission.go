package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"switchyard.dev/switchyard/bus"
)

// maxReviewBytes bounds a request body: the API server sends at most an
// object of about 1.5 MiB, twice for an update (object and oldObject).
const maxReviewBytes = 4 << 20

// maxWarnings caps the warnings of one answer; kubectl prints each on a
// line, and the API server drops what is over 4 KiB anyway.
const maxWarnings = 20

var ingressResource = metav1.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}

// reviewer judges Ingresses; the judge does it against the live state.
type reviewer interface {
	review(ctx context.Context, ing *networkingv1.Ingress) (*bus.IngressInfo, error)
}

// handler answers AdmissionReview v1 requests for Ingresses: a rejected
// Ingress is denied with the Problems run would report, a degraded one is
// admitted with them as warnings. Nothing in the object is executed or
// rendered: it goes through the translator and the plugins' parsers only.
type handler struct {
	judge reviewer
	log   func(msg string, err error)
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST an AdmissionReview", http.StatusMethodNotAllowed)
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		http.Error(w, "Content-Type must be application/json", http.StatusUnsupportedMediaType)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxReviewBytes))
	if err != nil {
		http.Error(w, "request body over 4 MiB or unreadable", http.StatusRequestEntityTooLarge)
		return
	}
	review, err := decodeReview(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	resp, err := h.respond(r.Context(), review.Request)
	if err != nil {
		// Not judged: the API server applies the webhook's failurePolicy.
		h.log("admission review not judged", err)
		http.Error(w, "not judged: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	review.Response, review.Request = resp, nil
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(review)
}

// decodeReview accepts an AdmissionReview v1 for an Ingress, nothing else.
func decodeReview(body []byte) (*admissionv1.AdmissionReview, error) {
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil {
		return nil, fmt.Errorf("not an AdmissionReview: %w", err)
	}
	if review.APIVersion != "admission.k8s.io/v1" || review.Kind != "AdmissionReview" {
		return nil, fmt.Errorf("want apiVersion admission.k8s.io/v1, kind AdmissionReview; got %q, %q", clip(review.APIVersion), clip(review.Kind))
	}
	req := review.Request
	switch {
	case req == nil:
		return nil, errors.New("AdmissionReview without a request")
	case req.UID == "":
		return nil, errors.New("AdmissionReview request without a uid")
	case req.Resource != ingressResource:
		return nil, fmt.Errorf("this webhook reviews networking.k8s.io/v1 ingresses, not %s", clip(req.Resource.String()))
	}
	return &review, nil
}

func (h *handler) respond(ctx context.Context, req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, error) {
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return resp, nil // a delete or connect changes nothing run would refuse
	}
	var ing networkingv1.Ingress
	if err := json.Unmarshal(req.Object.Raw, &ing); err != nil {
		resp.Allowed = false
		resp.Result = &metav1.Status{Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest,
			Message: fmt.Sprintf("the object is not an Ingress: %v", err)}
		return resp, nil
	}
	if ing.Namespace == "" {
		ing.Namespace = req.Namespace
	}
	info, err := h.judge.review(ctx, &ing)
	if err != nil || info == nil {
		return resp, err // nil info: another controller's Ingress
	}
	lines := problemLines(info.Problems)
	if info.Rejected {
		resp.Allowed = false
		resp.Result = &metav1.Status{Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid,
			Message: fmt.Sprintf("Switchyard would not serve ingress %s/%s: %s", ing.Namespace, ing.Name, strings.Join(lines, "; "))}
		return resp, nil
	}
	if len(lines) > maxWarnings {
		lines = append(lines[:maxWarnings], fmt.Sprintf("and %d more problems", len(lines)-maxWarnings))
	}
	resp.Warnings = lines
	return resp, nil
}

// problemLines are the Problems as check and the logs print them.
func problemLines(problems []bus.Problem) []string {
	lines := make([]string, 0, len(problems))
	for _, p := range problems {
		lines = append(lines, fmt.Sprintf("%s: %s: %s", p.Field, p.Reason, p.Message))
	}
	return lines
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
