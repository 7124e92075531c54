# frozen_string_literal: true

# Regexp constants Opal lacks. Rack::URLMap passes Regexp::NOENCODING to Regexp.new; JS
# regexps have no encoding flag, and Opal's Regexp.new ignores option bits it doesn't know.
class Regexp
  NOENCODING = 32 unless const_defined?(:NOENCODING)
  FIXEDENCODING = 16 unless const_defined?(:FIXEDENCODING)
end
