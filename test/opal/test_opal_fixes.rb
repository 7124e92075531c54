# frozen_string_literal: true

require_relative "helper"

# Each gap of Opal 1.8 that opal/opal_fixes/ (and its compile-time half in
# lib/up/node/rewriters/) fixes: the construct runs on MRI and on Opal, which must print the
# same. opal/UPSTREAM.md reports each gap to Opal.
class TestOpalFixes < Minitest::Test
  # @name, @length, @prototype, @caller, @arguments on a class (a JS function) and an object.
  def test_instance_variables_named_like_function_properties
    out = assert_same_on_opal_and_mri("fix_ivar_names")
    assert_includes out, %("Settings"\n"Settings"\ntrue\n)
  end

  # const_defined?("A::B::C"), as Mustermann looks up its node classes.
  def test_const_defined_with_a_path
    out = assert_same_on_opal_and_mri("fix_const_defined")
    assert_includes out, "does not refer to class/module"
  end

  # Forwardable's accessor as MRI reads it: 'self.class' (Mustermann), chains, ivars,
  # constants, private methods; SingleForwardable too.
  def test_forwardable_accessor_is_an_expression
    out = assert_same_on_opal_and_mri("fix_forwardable")
    assert_includes out, %("parser of Pattern"\n"compiler of Pattern"\n"strict parser"\n)
  end

  # File.fnmatch, each flag (Sinatra matches Accept entries with it).
  def test_file_fnmatch
    out = assert_same_on_opal_and_mri("fix_fnmatch")
    assert_includes out, %(["**/foo", "a/.b/c/foo", 2, false, false])
  end

  # Gem::Version and Gem::Requirement (Sinatra compares RUBY_VERSION as it loads).
  def test_rubygems_versions_and_requirements
    out = assert_same_on_opal_and_mri("fix_rubygems")
    assert_includes out, %(["~> 3.0.1", ["3.0.1", "3.0.9"]])
  end

  # Process.pid and ppid are the process's own (Opal said 0), $$ too; $0 names the script.
  def test_process_pid_ppid_and_program_name
    assert_equal "true\ntrue\ntrue\ntrue\ntrue\ntrue\ntrue\ntrue\n", assert_same_on_opal_and_mri("fix_process")
  end

  # private/protected sections, respond_to?, *_method_defined?, *_instance_methods (Sinatra's
  # Delegator asks respond_to?, Roda lists its hooks with private_instance_methods).
  def test_method_visibility
    out = assert_same_on_opal_and_mri("fix_visibility")
    assert_includes out, %(["also_secret", "made", "pair", "pair=", "reader"]\n)
  end

  # A require in a method or under rescue LoadError may be missing: it compiles, and
  # raises LoadError where MRI does, every time (Opal said false the second time).
  def test_optional_require_of_a_missing_file_raises_load_error_each_time
    out = assert_same_on_opal_and_mri("fix_require")
    assert_includes out, %(["LoadError", "cannot load such file -- up_missing_feature"]\n)
  end

  # A test of RUBY_ENGINE against another engine's name is false on Opal: the branch is left
  # out with what it requires (the build stopped on a require of a missing file there).
  def test_another_engines_branch_is_left_out
    assert_equal "else branch\nkept\nnot jruby\nor\n", assert_same_on_opal_and_mri("fix_engine_check")
  end

  # class_eval, instance_eval and eval of a String: Opal's parser, loaded from its own file
  # on the first one, compiles them as the bundle's files are compiled.
  def test_string_eval_loads_the_parser_when_needed
    out = assert_same_on_opal_and_mri("fix_string_eval")
    assert_includes out, %("one on 0.0.0.0:4567"\n)
    assert File.file?(Up::Node::OpalBuilder.parser_path(OpalRack.bundle("fix_string_eval")))
    refute File.file?(Up::Node::OpalBuilder.parser_path(OpalRack.bundle("fix_process"))), "a script without String evals has no parser file"
  end

  # <<, concat, sub!, slice! and the other String changes through variables, attributes
  # and Hash entries, with MRI's return values; Arrays unaffected.
  def test_strings_changed_in_place
    out = assert_same_on_opal_and_mri("fix_mutable_strings")
    assert_includes out, %("<inner inner>"\n).delete(" ")
  end


  # throw is not rescued on its way to catch (Sinatra's halt), and $! in a rescue body is
  # the exception it handles, also re-raised from an inner rescue.
  def test_throw_passes_rescue_and_reraise_keeps_the_exception
    out = assert_same_on_opal_and_mri("fix_catch_throw")
    assert out.start_with?(%("body"\nensure ran\n42\n)), out
  end


  # `next value` in a while loop still evaluates value (Opal dropped it: Sinatra's
  # error_block! spun forever); in a block it stays the block's value.
  def test_next_with_a_value_in_a_loop
    out = assert_same_on_opal_and_mri("fix_loop_next")
    assert out.start_with?(%("grand"\n"Grand"\n)), out
  end


  # String#encode with no encoding gives the string back (Opal failed in its runtime).
  def test_encode_without_an_encoding
    out = assert_same_on_opal_and_mri("fix_encode")
    assert out.start_with?(%("Jürgen"\n"UTF-8"\n)), out
  end


  # Method#parameters is an Array (Opal answered undefined; Tilt's ERB engine asks it).
  def test_method_parameters_is_an_array
    assert_equal "true\ntrue\n" * 4 + "2\n[]\nfalse\n", assert_same_on_opal_and_mri("fix_method_parameters")
  end


  # define_method's bodies: self, arguments, blocks, return, super under two names, Methods
  # as bodies, arity, and a throw passing through to its catch (Roda's route block).
  def test_define_method_bodies_behave_as_in_mri
    out = assert_same_on_opal_and_mri("fix_define_method")
    assert out.start_with?(%("child base Ada"\n"child other Bob"\n)), out
  end


  # super finds what MRI finds while the methods and ancestors on its way change between
  # calls (Opal's lookup is kept per method, receiver's ancestors and name).
  def test_super_follows_changed_methods_and_ancestors
    out = assert_same_on_opal_and_mri("fix_super_cache")
    assert out.start_with?(%("child<base>"\n"child<base>"\n"child<base again>"\n"child<middle<base again>>"\n)), out
  end

  # Array#all?, #any?, #none?, #find and #detect stop without a throw, with what Enumerable's
  # give the block, break and return through them, an Array changed while walked.
  def test_array_predicates_answer_as_in_mri
    out = assert_same_on_opal_and_mri("fix_array_predicates")
    assert out.start_with?(%([false, true, true]\n[true, false, false]\n)), out
  end

  # Calls with a block, super and aliases pass none to many arguments, splats, keywords and
  # the block as before (Opal.send2 calls the method without Function#apply).
  def test_sends_pass_arguments_and_blocks_as_in_mri
    out = assert_same_on_opal_and_mri("fix_send_call")
    assert out.start_with?(%([[], "block saw 0"]\n[[], "alias saw 0"]\n)), out
  end

  # Array#map, #select and #reject build their result as Opal's did, and blocks of every shape
  # take their arguments as before (the yields under them call without Function#apply).
  def test_array_map_select_reject_as_in_mri
    out = assert_same_on_opal_and_mri("fix_array_build")
    assert out.start_with?(%([2, 4, 6, 8, 10]\n)), out
  end

  # Constants read again from a method while they are set, removed, shadowed and included
  # between the reads (each scope reads Opal's cache without going through Opal.$$).
  def test_constants_follow_changes_as_in_mri
    out = assert_same_on_opal_and_mri("fix_const_lookup")
    assert out.start_with?(%(["outer", "base", "first", 1, "Outer::Helper"]\n)), out
  end

  # Hash#each and #each_pair: pairs whole or taken apart, break, Enumerators, a deletion in
  # the block, keys of every kind.
  def test_hash_each_yields_as_in_mri
    out = assert_same_on_opal_and_mri("fix_hash_each")
    assert out.start_with?(%(["content-type", "text/html"]\n["x-a", "1"]\n)), out
  end

  # Array#reject, #index, #rindex, #take_while take an element apart for |a, b| blocks
  # (Sinatra's caller_files took its own file for the app's).
  def test_array_blocks_take_elements_apart
    out = assert_same_on_opal_and_mri("fix_array_block_args")
    assert out.start_with?(%([[1, "a"], [3, "c"]]\n)), out
  end

  # %z at offset zero is +0000, as MRI writes it (Opal wrote -0000: Rack::CommonLogger's
  # lines on a UTC machine).
  def test_strftime_zone_at_offset_zero
    out = assert_same_on_opal_and_mri("fix_strftime_zone")
    assert out.start_with?(%("+0000"\n"+00:00"\n"+00:00:00"\n"%z +0000 %+0000"\n)), out
  end

  # "#{a}#{b}" with a part that holds bytes gives bytes (rack-session's cookie plaintext).
  def test_interpolation_keeps_bytes
    out = assert_same_on_opal_and_mri("fix_interpolation")
    assert out.start_with?(%(#<Encoding:ASCII-8BIT>\n22\n[2, 0, 254, 128, 123, 34]\n)), out
  end

  # String#split by a Regexp gives MRI's pieces (Opal's split is now an exec loop where V8
  # took its slow path: captures, empty matches, limits, surrogate pairs).
  def test_regexp_split_splits_as_in_mri
    out = assert_same_on_opal_and_mri("fix_regexp_split")
    assert out.start_with?(%(["a, b ,c", "[, \\\\t]+", ["a", "b", "c"], ["a", "b ,c"], ["a", "b", "c"]]\n)), out
  end

  # strip, sub, gsub and Regexp.escape give MRI's Strings (JavaScript's replace by a Regexp,
  # under them, is now an exec loop where V8 took its slow path).
  def test_regexp_replace_gives_mris_strings
    out = assert_same_on_opal_and_mri("fix_regexp_replace")
    assert out.start_with?(%(["127.0.0.1", "127.0.0.1 ", "  127.0.0.1"]\n)), out
  end
end
