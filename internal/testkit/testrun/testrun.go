// Package testrun runs a long-lived loop, such as a Poller's Run, in the
// background of a test, and stops it when the test ends.
package testrun

import (
	"context"
	"sync"
	"testing"
)

// Background calls run in a goroutine with a context that the returned
// stop cancels; stop then waits for run to return, and reports an error it
// returned. Stop runs at the end of tb anyway, and does its work once
// however often it is called.
func Background(tb testing.TB, run func(context.Context) error) (stop func()) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				tb.Errorf("background run: %v", err)
			}
		})
	}
	tb.Cleanup(stop)
	return stop
}
