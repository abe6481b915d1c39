"""checks.py: the tally the Python tests share. Each check prints ok or FAIL with what it checked;
the test's exit code is 1 when any failed."""


class Checks:
    def __init__(self, name):
        self.name, self.passed, self.failed = name, 0, 0

    def __call__(self, ok, what):
        print(f"{'ok  ' if ok else 'FAIL'} {what}")
        self.passed += bool(ok)
        self.failed += not ok

    def exit_code(self):
        print(f"{self.name}: {self.passed} passed, {self.failed} failed")
        return 1 if self.failed else 0
