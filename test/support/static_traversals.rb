# frozen_string_literal: true

# Request targets that try to leave a static root, sent as bytes (curl would tidy most of them
# up): dot segments plain, encoded and double-encoded, backslashes, overlong UTF-8, NUL, a
# symlink named "out" that points outside, an empty segment, a dotfile, an absolute-form target,
# IIS's %u escapes. Used by test/test_static_files.rb (up_ruby's engine) and
# test/conformance/test_static_files.rb (every runtime); each plants a secret beside the root.
module StaticTraversals
  TARGETS = [
    "/../secret.txt", "/..%2fsecret.txt", "/%2e%2e/secret.txt", "/%2E%2E%2Fsecret.txt",
    "/%252e%252e%252fsecret.txt", "/..%5csecret.txt", "/..\\secret.txt", "/%c0%ae%c0%ae/secret.txt",
    "/%c0%ae%c0%ae%c0%afsecret.txt", "/%e0%80%ae%e0%80%ae/secret.txt", "/out", "//secret.txt",
    "/docs/../../secret.txt", "/docs/%2e%2e/%2e%2e/secret.txt", "/secret.txt%00.html", "/.env",
    "/%2eenv", "/./../secret.txt", "/docs/.%2e/.%2e/secret.txt", "/%2f%2e%2e%2fsecret.txt",
    "http://127.0.0.1/../secret.txt", "/..;/secret.txt", "/%u002e%u002e/secret.txt"
  ].freeze
end
