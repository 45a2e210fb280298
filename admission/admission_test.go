package admission

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"switchyard.dev/switchyard/bus"
)

// fakeJudge answers by the Ingress's name.
type fakeJudge map[string]*bus.IngressInfo

func (f fakeJudge) review(_ context.Context, ing *networkingv1.Ingress) (*bus.IngressInfo, error) {
	if ing.Name == "unjudged" {
		return nil, errNotSynced
	}
	return f[ing.Namespace+"/"+ing.Name], nil
}

func reviewBody(t *testing.T, mutate func(*admissionv1.AdmissionReview)) string {
	t.Helper()
	ing := networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	raw, _ := json.Marshal(ing)
	r := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "u-1", Resource: ingressResource, Namespace: "shop",
			Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw}},
	}
	if mutate != nil {
		mutate(&r)
	}
	body, _ := json.Marshal(r)
	return string(body)
}

func named(name string) func(*admissionv1.AdmissionReview) {
	return func(r *admissionv1.AdmissionReview) {
		raw, _ := json.Marshal(networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: name}})
		r.Request.Object.Raw = raw
	}
}

func TestAdmissionReview(t *testing.T) {
	judge := fakeJudge{
		"shop/web": {Namespace: "shop", Name: "web"},
		"shop/bad": {Namespace: "shop", Name: "bad", Rejected: true, Problems: []bus.Problem{
			{Field: "metadata.annotations[nginx.ingress.kubernetes.io/configuration-snippet]", Reason: "AnnotationRefused", Message: "snippets are off"}}},
		"shop/meh": {Namespace: "shop", Name: "meh", Problems: []bus.Problem{
			{Field: "metadata.annotations[nginx.ingress.kubernetes.io/http2-push-preload]", Reason: "AnnotationNotSupported", Message: "ignored"}}},
	}
	h := &handler{judge: judge, log: func(string, error) {}}
	for _, tc := range []struct {
		name, method, contentType, body string
		wantStatus                      int
		wantAllowed                     bool
		wantMessage, wantWarning        string
	}{
		{name: "served as asked", body: reviewBody(t, nil), wantStatus: 200, wantAllowed: true},
		{name: "rejected is denied with the problems", body: reviewBody(t, named("bad")), wantStatus: 200,
			wantMessage: "Switchyard would not serve ingress shop/bad: metadata.annotations[nginx.ingress.kubernetes.io/configuration-snippet]: AnnotationRefused: snippets are off"},
		{name: "degraded is admitted with warnings", body: reviewBody(t, named("meh")), wantStatus: 200, wantAllowed: true,
			wantWarning: "metadata.annotations[nginx.ingress.kubernetes.io/http2-push-preload]: AnnotationNotSupported: ignored"},
		{name: "another controller's Ingress is admitted", body: reviewBody(t, named("theirs")), wantStatus: 200, wantAllowed: true},
		{name: "delete is admitted unjudged", body: reviewBody(t, func(r *admissionv1.AdmissionReview) {
			r.Request.Operation = admissionv1.Delete
			r.Request.Object.Raw = nil
		}), wantStatus: 200, wantAllowed: true},
		{name: "not an Ingress object", body: reviewBody(t, func(r *admissionv1.AdmissionReview) { r.Request.Object.Raw = []byte(`[1]`) }),
			wantStatus: 200, wantMessage: "the object is not an Ingress"},
		{name: "not yet synced: the failure policy decides", body: reviewBody(t, named("unjudged")), wantStatus: 503},
		{name: "v1beta1 review refused", body: reviewBody(t, func(r *admissionv1.AdmissionReview) { r.APIVersion = "admission.k8s.io/v1beta1" }), wantStatus: 400},
		{name: "another resource refused", body: reviewBody(t, func(r *admissionv1.AdmissionReview) { r.Request.Resource.Resource = "services" }), wantStatus: 400},
		{name: "no uid refused", body: reviewBody(t, func(r *admissionv1.AdmissionReview) { r.Request.UID = "" }), wantStatus: 400},
		{name: "no request refused", body: `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, wantStatus: 400},
		{name: "garbage refused", body: `{`, wantStatus: 400},
		{name: "GET refused", method: http.MethodGet, body: reviewBody(t, nil), wantStatus: 405},
		{name: "not JSON refused", contentType: "text/plain", body: reviewBody(t, nil), wantStatus: 415},
		{name: "over 4 MiB refused", body: `{"x":"` + strings.Repeat("a", maxReviewBytes) + `"}`, wantStatus: 413},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method, ct := tc.method, tc.contentType
			if method == "" {
				method = http.MethodPost
			}
			if ct == "" {
				ct = "application/json"
			}
			req := httptest.NewRequest(method, Path, strings.NewReader(tc.body))
			req.Header.Set("Content-Type", ct)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.wantStatus, rec.Body)
			}
			if rec.Code != 200 {
				return
			}
			var got admissionv1.AdmissionReview
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			resp := got.Response
			if resp == nil || resp.UID != "u-1" || got.Request != nil || got.APIVersion != "admission.k8s.io/v1" {
				t.Fatalf("answer %+v", got)
			}
			if resp.Allowed != tc.wantAllowed {
				t.Errorf("allowed %v, want %v (%+v)", resp.Allowed, tc.wantAllowed, resp.Result)
			}
			if tc.wantMessage != "" && (resp.Result == nil || !strings.Contains(resp.Result.Message, tc.wantMessage)) {
				t.Errorf("result %+v, want message %q", resp.Result, tc.wantMessage)
			}
			if tc.wantWarning != "" && (len(resp.Warnings) != 1 || resp.Warnings[0] != tc.wantWarning) {
				t.Errorf("warnings %q, want %q", resp.Warnings, tc.wantWarning)
			}
		})
	}
}

func TestWarningsAreCapped(t *testing.T) {
	var problems []bus.Problem
	for range maxWarnings + 5 {
		problems = append(problems, bus.Problem{Field: "f", Reason: "R", Message: "m"})
	}
	h := &handler{judge: fakeJudge{"shop/web": {Namespace: "shop", Name: "web", Problems: problems}}}
	review, err := decodeReview([]byte(reviewBody(t, nil)))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := h.respond(context.Background(), review.Request)
	if err != nil || len(resp.Warnings) != maxWarnings+1 || resp.Warnings[maxWarnings] != "and 5 more problems" {
		t.Fatalf("%v %q", err, resp.Warnings)
	}
}
