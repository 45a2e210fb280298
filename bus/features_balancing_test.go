package bus

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

func TestBalancingApplyTo(t *testing.T) {
	stale := func() *Backend {
		return &Backend{Name: "web", LoadBalance: LoadBalanceEWMA,
			UpstreamHashByConfig:  &UpstreamHashByConfig{UpstreamHashBy: "$uri"},
			SessionAffinityConfig: &SessionAffinityConfig{Name: AffinityCookie}}
	}
	b := stale()
	(*Balancing)(nil).ApplyTo(b, LoadBalanceRoundRobin)
	if b.LoadBalance != "" || b.UpstreamHashByConfig != nil || b.SessionAffinityConfig != nil {
		t.Errorf("nil with round_robin: %+v", b)
	}
	b = stale()
	(*Balancing)(nil).ApplyTo(b, LoadBalanceEWMA)
	if b.LoadBalance != LoadBalanceEWMA || b.UpstreamHashByConfig != nil {
		t.Errorf("nil with the global ewma: %+v", b)
	}
	b = stale()
	(&Balancing{LoadBalance: LoadBalanceRoundRobin}).ApplyTo(b, LoadBalanceEWMA)
	if b.LoadBalance != "" {
		t.Errorf("annotation round_robin over the global ewma: %+v", b)
	}
	hash := &Balancing{UpstreamHash: &UpstreamHashByConfig{UpstreamHashBy: "$request_uri"}}
	b = stale()
	hash.ApplyTo(b, LoadBalanceRoundRobin)
	if b.UpstreamHashByConfig == nil || b.UpstreamHashByConfig.UpstreamHashBy != "$request_uri" || b.SessionAffinityConfig != nil {
		t.Errorf("hash: %+v", b)
	}
	// The backend gets a copy: changing it leaves the plugin's result alone.
	b.UpstreamHashByConfig.UpstreamHashBy = "x"
	if hash.UpstreamHash.UpstreamHashBy != "$request_uri" {
		t.Errorf("ApplyTo shares the config with the backend")
	}
}
