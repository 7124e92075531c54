# frozen-string-literal: true

# UP!: a replacement of Roda's lib/roda/plugins/_base64.rb for Opal (see opal/README.md),
# which Opal loads instead of the gem's file because opal/ comes first on its load path.
# Based on Roda 3.109.0, sha256 of the original: 5aa10f8bae91ee11f0322d7e22a8a08c2a55c24250f5bb4b077c8622b60aa30a
# Roda is MIT licensed: Copyright (c) 2014-2026 Jeremy Evans and contributors, and the
# earlier authors its MIT-LICENSE names.
# urlsafe_encode64 turned + and / into - and _ with String#tr!, and Opal strings are
# immutable JS strings (tr! raises NotImplementedError); the change is marked `UP!:`.

#
class Roda
  module RodaPlugins
    module Base64_
      class << self
        if RUBY_VERSION >= '2.4'
          def decode64(str)
            str.unpack1("m0")
          end
        # simplecov:disable
        else
          def decode64(str)
            str.unpack("m0")[0]
          end
        # simplecov:enable
        end

        def urlsafe_encode64(bin)
          # UP!: was `str = [bin].pack("m0")`, `str.tr!("+/", "-_")`, `str`.
          [bin].pack("m0").tr("+/", "-_")
        end

        def urlsafe_decode64(str)
          decode64(str.tr("-_", "+/"))
        end
      end
    end

    register_plugin(:_base64, Base64_)
  end
end
