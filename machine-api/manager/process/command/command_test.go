package command

import (
	"context"
	"errors"
	"flag"
	"testing"
)

// managerOptions and providerOptions stand for a manager's and a provider's options: defaults in
// the value, flags bound with the current values as defaults.
type managerOptions struct{ Concurrency int }

func (o *managerOptions) AddFlags(fs *flag.FlagSet) {
	fs.IntVar(&o.Concurrency, "concurrency", o.Concurrency, "")
}

type providerOptions struct{ Size string }

func (o *providerOptions) AddFlags(fs *flag.FlagSet) { fs.StringVar(&o.Size, "size", o.Size, "") }

type fakeProvider struct{ size string }

func newFake(o providerOptions) (*fakeProvider, error) {
	if o.Size == "enormous" {
		return nil, errors.New("no such size")
	}
	return &fakeProvider{size: o.Size}, nil
}

// TestBindManager: the manager runs with the options as the command line set them over the
// defaults, around the provider they make; options no provider accepts are the command line's
// fault (Main exits with 2), and the manager does not run.
func TestBindManager(t *testing.T) {
	cases := map[string]struct {
		args        []string
		concurrency int
		size        string
		usage       bool
	}{
		"defaults":                            {concurrency: 10, size: "small"},
		"flags over the defaults":             {args: []string{"--concurrency=3", "--size=large"}, concurrency: 3, size: "large"},
		"a provider option no provider takes": {args: []string{"--size=enormous"}, usage: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			fs := flag.NewFlagSet(name, flag.ContinueOnError)
			var ran *fakeProvider
			var got managerOptions
			run := bindManager(fs, &managerOptions{Concurrency: 10}, &providerOptions{Size: "small"}, newFake,
				func(_ context.Context, p *fakeProvider, o managerOptions) error {
					ran, got = p, o
					return nil
				})
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := run(context.Background())
			if tc.usage {
				if !errors.As(err, &usageError{}) || ran != nil {
					t.Fatalf("error %v (a usage error: %v), manager ran: %v; want a usage error and no run", err, errors.As(err, &usageError{}), ran != nil)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ran == nil || ran.size != tc.size || got.Concurrency != tc.concurrency {
				t.Errorf("ran with provider %+v and options %+v, want size %s and concurrency %d", ran, got, tc.size, tc.concurrency)
			}
		})
	}
}
