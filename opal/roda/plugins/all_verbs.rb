# frozen-string-literal: true

# UP!: a replacement of Roda's lib/roda/plugins/all_verbs.rb for Opal (see opal/README.md),
# which Opal loads instead of the gem's file because opal/ comes first on its load path.
# Based on Roda 3.109.0, sha256 of the original: fc2f42a5bab2ec6d1bea2f6cf7c19c98ada3ddb1c88da30f67fe77ce8d069ebf
# Roda is MIT licensed: Copyright (c) 2014-2026 Jeremy Evans and contributors, and the
# earlier authors its MIT-LICENSE names.
# The verb methods were made by class_eval of a String, which needs Opal's parser at run
# time (not in the bundle); they are made with define_method where it is marked `UP!:`.

#
class Roda
  module RodaPlugins
    # The all_verbs plugin adds methods for http verbs other than
    # get and post.  The following verbs are added, assuming
    # rack handles them: delete, head, options, link, patch, put,
    # query, trace, unlink.
    #
    # These methods operate just like Roda's default get and post
    # methods, so using them without any arguments just checks for
    # the request method, while using them with any arguments also
    # checks that the arguments match the full path.
    #
    # Example:
    #
    #   plugin :all_verbs
    #
    #   route do |r|
    #     r.delete do
    #       # Handle DELETE
    #     end
    #     r.put do
    #       # Handle PUT
    #     end
    #     r.patch do
    #       # Handle PATCH
    #     end
    #   end
    #
    # The verb methods are defined via metaprogramming, so there
    # isn't documentation for the individual methods created.
    module AllVerbs
      module RequestMethods
        %w'delete head options link patch put query trace unlink'.each do |verb|
          if ::Rack::Request.method_defined?("#{verb}?")
            # UP!: was a class_eval of `def #{verb}(*args, &block)` that calls
            # `_verb(args, &block) if #{verb}?`, as a String.
            predicate = :"#{verb}?"
            define_method(verb) { |*args, &block| _verb(args, &block) if send(predicate) }
          end
        end
      end
    end

    register_plugin(:all_verbs, AllVerbs)
  end
end
