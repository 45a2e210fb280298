package features

import (
	"strings"
	"testing"
)

func TestBalancingValidate(t *testing.T) {
	cookie := &SessionAffinityConfig{Name: AffinityCookie, CookieSessionAffinity: CookieSessionAffinity{Name: "route"}}
	valid := []*Balancing{
		nil, {}, {LoadBalance: LoadBalanceEWMA}, {LoadBalance: LoadBalanceRoundRobin},
		{UpstreamHash: &UpstreamHashByConfig{UpstreamHashBy: "$request_uri", Subset: true, SubsetSize: 3}},
		{Affinity: cookie, AffinityCanaryBehavior: "legacy"},
	}
	for _, b := range valid {
		if err := (&Features{Balancing: b}).Validate(); err != nil {
			t.Errorf("%+v refused: %v", b, err)
		}
	}
	invalid := map[string]*Balancing{
		"chash as load-balance": {LoadBalance: LoadBalanceCHash},
		"unknown load-balance":  {LoadBalance: "ewma;"},
		"canary behaviour":      {AffinityCanaryBehavior: "always"},
		"empty hash":            {UpstreamHash: &UpstreamHashByConfig{Subset: true}},
		"hash with braces":      {UpstreamHash: &UpstreamHashByConfig{UpstreamHashBy: "${uri}"}},
		"affinity without name": {Affinity: &SessionAffinityConfig{}},
		"cookie path attribute": {Affinity: &SessionAffinityConfig{Name: AffinityCookie,
			CookieSessionAffinity: CookieSessionAffinity{Path: "/;Domain=x"}}},
		"cookie name quote": {Affinity: &SessionAffinityConfig{Name: AffinityCookie,
			CookieSessionAffinity: CookieSessionAffinity{Name: `a"b`}}},
	}
	for name, b := range invalid {
		err := (&Features{Balancing: b}).Validate()
		if err == nil || !strings.HasPrefix(err.Error(), "balancing: ") {
			t.Errorf("%s: got %v, want a balancing error", name, err)
		}
	}
}
