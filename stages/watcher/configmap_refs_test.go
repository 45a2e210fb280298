package watcher

import (
	"slices"
	"testing"
)

func TestControllerConfigMapRefs(t *testing.T) {
	cases := []struct {
		data string
		want []string
	}{
		{`{"data":{"add-headers":"ingress/add","proxy-set-headers":" ingress/proxy "}}`, []string{"ingress/add", "ingress/proxy"}},
		{`{"data":{"add-headers":"no-namespace","proxy-set-headers":"a/b/c"}}`, nil},
		{`{"data":{"use-gzip":"true"}}`, nil},
		{`not json`, nil},
	}
	for _, c := range cases {
		if got := controllerConfigMapRefs([]byte(c.data)); !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.data, got, c.want)
		}
	}
}
