# frozen_string_literal: true

# Tests of RUBY_ENGINE against another engine's name. On Opal the branch that cannot run is
# left out of the build, with the files it requires: these exist nowhere, and the build would
# stop on them.
if RUBY_ENGINE == "truffleruby"
  require "up_missing_for_truffleruby"
else
  puts "else branch"
end
require "up_missing_for_jruby" if "jruby" == ::RUBY_ENGINE
kept = ("kept" unless RUBY_ENGINE == "truffleruby")
puts kept, RUBY_ENGINE != "jruby" ? "not jruby" : "jruby"
puts(RUBY_ENGINE == "truffleruby" || "or")
