package fault

import (
	"errors"
	"fmt"
	"testing"
)

func TestClassOf(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", Errorf(ClassNotFound, "no model"))
	if ClassOf(err) != ClassNotFound || ClassNotFound.HTTPStatus() != 404 {
		t.Fatal(err)
	}
	if ClassOf(errors.New("plain")) != ClassInternal || ClassInternal.HTTPStatus() != 500 {
		t.Fatal("plain errors are internal")
	}
}
