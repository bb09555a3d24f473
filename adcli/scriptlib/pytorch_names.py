"""Public names of PyTorch 2.13 (`dir()` of each module and of torch.Tensor).

Used only to word errors: a name PyTorch has but adcli lacks gets
"adcli does not support torch.X yet"; any other name gets Python's own message.
The session hands `library` to the language (`adcli.lang.host.library`).
Generated from torch 2.13.0 by listing dir(); facts, not code."""

from __future__ import annotations

import functools

from adcli.autograd.tensor import Tensor
from adcli.lang.host import Library

PYTORCH_NAMES: dict[str, frozenset[str]] = {
    "torch": frozenset(
        (
            "AVG AcceleratorError AggregationType AliasDb AnyType Argument "
            "ArgumentSpec AwaitType BFloat16Storage BFloat16Tensor BenchmarkConfig "
            "BenchmarkExecutionStats Block BoolStorage BoolTensor BoolType "
            "BufferDict ByteStorage ByteTensor CallStack Capsule CharStorage "
            "CharTensor ClassType Code CompilationUnit CompleteArgumentSpec "
            "ComplexDoubleStorage ComplexFloatStorage ComplexType "
            "ConcreteModuleType ConcreteModuleTypeBuilder DeepCopyMemoTable "
            "DeserializationStorageContext DeviceObjType DictType "
            "DisableTorchFunction DisableTorchFunctionSubclass DispatchKey "
            "DispatchKeySet DoubleStorage DoubleTensor EnumType ErrorReport Event "
            "ExcludeDispatchKeyGuard ExecutionPlan FatalError FileCheck "
            "FloatStorage FloatTensor FloatType FunctionSchema Future FutureType "
            "Generator GradScaler Gradient Graph GraphExecutorState HalfStorage "
            "HalfTensor IODescriptor InferredType IntStorage IntTensor IntType "
            "InterfaceType JITException ListType LiteScriptModule LockingLogger "
            "LoggerBase LongStorage LongTensor ModuleDict Node NoneType NoopLogger "
            "NumberType OperatorInfo OptionalType OutOfMemoryError PRIVATE_OPS "
            "ParameterDict PyObjectType PyTorchFileReader PyTorchFileWriter "
            "QInt32Storage QInt8Storage QUInt2x4Storage QUInt4x2Storage "
            "QUInt8Storage RRefType SUM ScriptClass ScriptClassFunction ScriptDict "
            "ScriptDictIterator ScriptDictKeyIterator ScriptFunction ScriptList "
            "ScriptListIterator ScriptMethod ScriptModule ScriptModuleSerializer "
            "ScriptObject ScriptObjectProperty SerializationStorageContext "
            "ShortStorage ShortTensor Size StaticModule Storage StorageBase Stream "
            "StreamObjType StringType SymBool SymBoolType SymFloat SymInt "
            "SymIntType TYPE_CHECKING Tag Tensor TensorType ThroughputBenchmark "
            "TracingState TupleType Type TypedStorage USE_GLOBAL_DEPS "
            "USE_RTLD_GLOBAL_WITH_LIBTORCH UnionType UntypedStorage Use Value abs "
            "abs_ absolute accelerator acos acos_ acosh acosh_ adaptive_avg_pool1d "
            "adaptive_max_pool1d add addbmm addcdiv addcmul addmm addmv addmv_ addr "
            "adjoint affine_grid_generator alias_copy all allclose alpha_dropout "
            "alpha_dropout_ amax amin aminmax amp angle any ao arange arccos "
            "arccos_ arccosh arccosh_ arcsin arcsin_ arcsinh arcsinh_ arctan "
            "arctan2 arctan_ arctanh arctanh_ are_deterministic_algorithms_enabled "
            "argmax argmin argsort argwhere as_strided as_strided_ as_strided_copy "
            "as_strided_scatter as_tensor asarray asin asin_ asinh asinh_ atan "
            "atan2 atan_ atanh atanh_ atleast_1d atleast_2d atleast_3d autocast "
            "autocast_decrement_nesting autocast_increment_nesting autograd "
            "avg_pool1d backends baddbmm bartlett_window batch_norm "
            "batch_norm_backward_elemt batch_norm_backward_reduce batch_norm_elemt "
            "batch_norm_gather_stats batch_norm_gather_stats_with_counts "
            "batch_norm_stats batch_norm_update_stats bernoulli bfloat16 bilinear "
            "binary_cross_entropy_with_logits bincount binomial bit bits16 bits1x8 "
            "bits2x4 bits4x2 bits8 bitwise_and bitwise_left_shift bitwise_not "
            "bitwise_or bitwise_right_shift bitwise_xor blackman_window block_diag "
            "bmm bool broadcast_shapes broadcast_tensors broadcast_to bucketize "
            "builtins can_cast cartesian_prod cat ccol_indices_copy cdist cdouble "
            "ceil ceil_ celu celu_ cfloat chain_matmul chalf channel_shuffle "
            "channels_last channels_last_3d cholesky cholesky_inverse "
            "cholesky_solve choose_qparams_optimized chunk clamp clamp_ clamp_max "
            "clamp_max_ clamp_min clamp_min_ classes classproperty "
            "clear_autocast_cache clip clip_ clone col_indices_copy column_stack "
            "combinations compile compiled_with_cxx11_abi compiler complex "
            "complex128 complex32 complex64 concat concatenate cond conj "
            "conj_physical conj_physical_ constant_pad_nd contiguous_format conv1d "
            "conv2d conv3d conv_tbc conv_transpose1d conv_transpose2d "
            "conv_transpose3d convolution copysign corrcoef cos cos_ cosh cosh_ "
            "cosine_embedding_loss cosine_similarity count_nonzero cov cpp cpu "
            "cross crow_indices_copy ctc_loss ctypes cuda "
            "cudnn_affine_grid_generator cudnn_batch_norm cudnn_convolution "
            "cudnn_convolution_add_relu cudnn_convolution_relu "
            "cudnn_convolution_transpose cudnn_grid_sampler cudnn_is_acceptable "
            "cummax cummin cumprod cumsum cumulative_trapezoid default_generator "
            "deg2rad deg2rad_ dequantize det detach detach_ detach_copy device diag "
            "diag_embed diagflat diagonal diagonal_copy diagonal_scatter diff "
            "digamma dist distributed distributions div divide dot double dropout "
            "dropout_ dsmm dsplit dstack dtype e eig einsum embedding embedding_bag "
            "embedding_renorm_ empty empty_like empty_permuted empty_quantized "
            "empty_strided enable_grad eq equal erf erf_ erfc erfc_ erfinv exp exp2 "
            "exp2_ exp_ expand_copy expm1 expm1_ export eye "
            "fake_quantize_per_channel_affine fake_quantize_per_tensor_affine "
            "fbgemm_linear_fp16_weight fbgemm_linear_fp16_weight_fp32_activation "
            "fbgemm_linear_int8_weight fbgemm_linear_int8_weight_fp32_activation "
            "fbgemm_linear_quantize_weight fbgemm_pack_gemm_matrix_fp16 "
            "fbgemm_pack_quantized_matrix feature_alpha_dropout "
            "feature_alpha_dropout_ feature_dropout feature_dropout_ fft fill fill_ "
            "finfo fix fix_ flatten flip fliplr flipud float float16 float32 "
            "float4_e2m1fn_x2 float64 float8_e4m3fn float8_e4m3fnuz float8_e5m2 "
            "float8_e5m2fnuz float8_e8m0fnu float_power floor floor_ floor_divide "
            "fmax fmin fmod fork frac frac_ frexp frobenius_norm from_dlpack "
            "from_file from_numpy frombuffer full full_like func functional "
            "functools fused_moving_avg_obs_fake_quant futures fx gather gcd gcd_ "
            "ge geqrf ger get_autocast_cpu_dtype get_autocast_dtype "
            "get_autocast_gpu_dtype get_autocast_ipu_dtype get_autocast_xla_dtype "
            "get_default_device get_default_dtype get_deterministic_debug_mode "
            "get_device get_device_module get_file_path "
            "get_float32_matmul_precision get_num_interop_threads get_num_threads "
            "get_rng_state glob gradient greater greater_equal grid_sampler "
            "grid_sampler_2d grid_sampler_3d group_norm gru gru_cell gt half "
            "hamming_window hann_window hardshrink has_lapack has_mkl has_openmp "
            "has_spectral hash_tensor heaviside hinge_embedding_loss histc "
            "histogram histogramdd hsmm hsplit hspmm hstack hub hypot i0 i0_ igamma "
            "igammac iinfo imag import_ir_module import_ir_module_from_buffer "
            "importlib index_add index_copy index_fill index_put index_put_ "
            "index_reduce index_select indices_copy inf inference_mode "
            "init_num_threads initial_seed inner inspect instance_norm int int1 "
            "int16 int2 int3 int32 int4 int5 int6 int64 int7 int8 int_repr inverse "
            "is_anomaly_check_nan_enabled is_anomaly_enabled "
            "is_autocast_cache_enabled is_autocast_cpu_enabled is_autocast_enabled "
            "is_autocast_ipu_enabled is_autocast_xla_enabled is_complex is_conj "
            "is_deterministic_algorithms_warn_only_enabled is_distributed "
            "is_floating_point is_grad_enabled is_inference "
            "is_inference_mode_enabled is_neg is_nonzero is_same_size is_signed "
            "is_storage is_tensor is_vulkan_available is_warn_always_enabled "
            "isclose isfinite isin isinf isnan isneginf isposinf isreal istft "
            "jagged jit kaiser_window kl_div kron kthvalue layer_norm layout lcm "
            "lcm_ ldexp ldexp_ le legacy_contiguous_format lerp less less_equal "
            "lgamma library linalg linspace load lobpcg log log10 log10_ log1p "
            "log1p_ log2 log2_ log_ log_softmax logaddexp logaddexp2 logcumsumexp "
            "logdet logical_and logical_not logical_or logical_xor logit logit_ "
            "logspace logsumexp long lstm lstm_cell lstsq lt lu lu_solve lu_unpack "
            "manual_seed margin_ranking_loss masked masked_fill masked_scatter "
            "masked_select math matmul matrix_exp matrix_power matrix_rank max "
            "max_pool1d max_pool1d_with_indices max_pool2d max_pool3d maximum mean "
            "median memory_format merge_type_from_type_comment meshgrid min minimum "
            "miopen_batch_norm miopen_convolution miopen_convolution_add_relu "
            "miopen_convolution_relu miopen_convolution_transpose miopen_ctc_loss "
            "miopen_depthwise_convolution miopen_rnn mkldnn_adaptive_avg_pool2d "
            "mkldnn_convolution mkldnn_linear_backward_weights mkldnn_max_pool2d "
            "mkldnn_max_pool3d mkldnn_rnn_layer mm mode monitor moveaxis movedim "
            "mps msort mtia mul multinomial multiply multiprocessing mv mvlgamma "
            "nan nan_to_num nan_to_num_ nanmean nanmedian nanquantile nansum narrow "
            "narrow_copy native_batch_norm native_channel_shuffle native_dropout "
            "native_group_norm native_layer_norm native_norm ne neg neg_ negative "
            "negative_ nested newaxis nextafter nn no_grad nonzero nonzero_static "
            "norm norm_except_dim normal not_equal nuclear_norm numel ones "
            "ones_like ops optim orgqr ormqr os outer overrides package "
            "pairwise_distance parse_ir parse_schema parse_type_comment pca_lowrank "
            "pdist per_channel_affine per_channel_affine_float_qparams "
            "per_channel_symmetric per_tensor_affine per_tensor_symmetric permute "
            "permute_copy pi pinverse pixel_shuffle pixel_unshuffle platform "
            "poisson poisson_nll_loss polar polygamma positive pow prelu "
            "prepare_multiprocessing_environment preserve_format prod profiler "
            "profiler_allow_cudagraph_cupti_lazy_reinit_cuda12 promote_types put "
            "q_per_channel_axis q_per_channel_scales q_per_channel_zero_points "
            "q_scale q_zero_point qint32 qint8 qr qscheme quantile quantization "
            "quantize_per_channel quantize_per_tensor quantize_per_tensor_dynamic "
            "quantized_batch_norm quantized_gru quantized_gru_cell quantized_lstm "
            "quantized_lstm_cell quantized_max_pool1d quantized_max_pool2d "
            "quantized_max_pool3d quantized_rnn_relu_cell quantized_rnn_tanh_cell "
            "quasirandom quint2x4 quint4x2 quint8 rad2deg rad2deg_ rand rand_like "
            "randint randint_like randn randn_like random randperm range ravel real "
            "reciprocal reciprocal_ relu relu_ remainder renorm repeat_interleave "
            "reshape resize_as_ resize_as_sparse_ resolve_conj resolve_neg "
            "result_type return_types rms_norm rnn_relu rnn_relu_cell rnn_tanh "
            "rnn_tanh_cell roll rot90 round round_ row_indices_copy row_stack rrelu "
            "rrelu_ rsqrt rsqrt_ rsub saddmm save scalar_tensor scatter scatter_add "
            "scatter_reduce searchsorted seed segment_reduce select select_copy "
            "select_scatter selu selu_ serialization set_anomaly_enabled "
            "set_autocast_cache_enabled set_autocast_cpu_dtype "
            "set_autocast_cpu_enabled set_autocast_dtype set_autocast_enabled "
            "set_autocast_gpu_dtype set_autocast_ipu_dtype set_autocast_ipu_enabled "
            "set_autocast_xla_dtype set_autocast_xla_enabled set_default_device "
            "set_default_dtype set_default_tensor_type set_deterministic_debug_mode "
            "set_float32_matmul_precision set_flush_denormal set_grad_enabled "
            "set_num_interop_threads set_num_threads set_printoptions set_rng_state "
            "set_warn_always sgn short sigmoid sigmoid_ sign signal signbit sin "
            "sin_ sinc sinc_ sinh sinh_ slice_copy slice_inverse slice_scatter "
            "slogdet smm softmax solve sort sparse sparse_bsc sparse_bsc_tensor "
            "sparse_bsr sparse_bsr_tensor sparse_compressed_tensor sparse_coo "
            "sparse_coo_tensor sparse_csc sparse_csc_tensor sparse_csr "
            "sparse_csr_tensor special split split_copy split_with_sizes "
            "split_with_sizes_copy spmm sqrt sqrt_ square square_ squeeze "
            "squeeze_copy sspaddmm stack std std_mean stft storage strided sub "
            "subtract sum svd svd_lowrank swapaxes swapdims sym_constrain_range "
            "sym_constrain_range_for_size sym_float sym_fresh_size sym_int sym_ite "
            "sym_max sym_min sym_not sym_sqrt sym_sum symeig sys t t_copy take "
            "take_along_dim tan tan_ tanh tanh_ tensor tensor_split tensordot "
            "testing textwrap thread_safe_generator threading threshold threshold_ "
            "tile to_dlpack topk torch torch_version trace transpose transpose_copy "
            "trapezoid trapz triangular_solve tril tril_indices triplet_margin_loss "
            "triu triu_indices true_divide trunc trunc_ typename types uint1 uint16 "
            "uint2 uint3 uint32 uint4 uint5 uint6 uint64 uint7 uint8 unbind "
            "unbind_copy unflatten unfold_copy unify_type_list unique "
            "unique_consecutive unravel_index unsafe_chunk unsafe_split "
            "unsafe_split_with_sizes unsqueeze unsqueeze_copy "
            "use_deterministic_algorithms utils values_copy vander var var_mean "
            "vdot version view_as_complex view_as_complex_copy view_as_real "
            "view_as_real_copy view_copy vmap vsplit vstack wait warnings where "
            "while_loop windows xlogy xlogy_ xpu zero_ zeros zeros_like "
        ).split()
    ),
    "torch.nn": frozenset(
        (
            "AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool3d "
            "AdaptiveLogSoftmaxWithLoss AdaptiveMaxPool1d AdaptiveMaxPool2d "
            "AdaptiveMaxPool3d AlphaDropout AvgPool1d AvgPool2d AvgPool3d BCELoss "
            "BCEWithLogitsLoss BatchNorm1d BatchNorm2d BatchNorm3d Bilinear Buffer "
            "CELU CTCLoss ChannelShuffle CircularPad1d CircularPad2d CircularPad3d "
            "ConstantPad1d ConstantPad2d ConstantPad3d Container Conv1d Conv2d "
            "Conv3d ConvTranspose1d ConvTranspose2d ConvTranspose3d "
            "CosineEmbeddingLoss CosineSimilarity CrossEntropyLoss CrossMapLRN2d "
            "DataParallel Dropout Dropout1d Dropout2d Dropout3d ELU Embedding "
            "EmbeddingBag FeatureAlphaDropout Flatten Fold FractionalMaxPool2d "
            "FractionalMaxPool3d GELU GLU GRU GRUCell GaussianNLLLoss GroupNorm "
            "Hardshrink Hardsigmoid Hardswish Hardtanh HingeEmbeddingLoss HuberLoss "
            "Identity InstanceNorm1d InstanceNorm2d InstanceNorm3d KLDivLoss L1Loss "
            "LPPool1d LPPool2d LPPool3d LSTM LSTMCell LayerNorm LazyBatchNorm1d "
            "LazyBatchNorm2d LazyBatchNorm3d LazyConv1d LazyConv2d LazyConv3d "
            "LazyConvTranspose1d LazyConvTranspose2d LazyConvTranspose3d "
            "LazyInstanceNorm1d LazyInstanceNorm2d LazyInstanceNorm3d LazyLinear "
            "LeakyReLU Linear LinearCrossEntropyLoss LinearCrossEntropyOptions "
            "LocalResponseNorm LogSigmoid LogSoftmax MSELoss MarginRankingLoss "
            "MaxPool1d MaxPool2d MaxPool3d MaxUnpool1d MaxUnpool2d MaxUnpool3d Mish "
            "Module ModuleDict ModuleList MultiLabelMarginLoss "
            "MultiLabelSoftMarginLoss MultiMarginLoss MultiheadAttention NLLLoss "
            "NLLLoss2d PReLU PairwiseDistance Parameter ParameterDict ParameterList "
            "PixelShuffle PixelUnshuffle PoissonNLLLoss RMSNorm RNN RNNBase RNNCell "
            "RNNCellBase RReLU ReLU ReLU6 ReflectionPad1d ReflectionPad2d "
            "ReflectionPad3d ReplicationPad1d ReplicationPad2d ReplicationPad3d "
            "SELU Sequential SiLU Sigmoid SmoothL1Loss SoftMarginLoss Softmax "
            "Softmax2d Softmin Softplus Softshrink Softsign SyncBatchNorm Tanh "
            "Tanhshrink Threshold Transformer TransformerDecoder "
            "TransformerDecoderLayer TransformerEncoder TransformerEncoderLayer "
            "TripletMarginLoss TripletMarginWithDistanceLoss Unflatten Unfold "
            "UninitializedBuffer UninitializedParameter Upsample "
            "UpsamplingBilinear2d UpsamplingNearest2d ZeroPad1d ZeroPad2d ZeroPad3d "
            "attention common_types factory_kwargs functional grad init intrinsic "
            "modules parallel parameter qat quantizable quantized utils "
        ).split()
    ),
    "torch.nn.functional": frozenset(
        (
            "BroadcastingList1 BroadcastingList2 BroadcastingList3 Callable DType "
            "GRID_SAMPLE_INTERPOLATION_MODES GRID_SAMPLE_PADDING_MODES Optional "
            "ScalingType SwizzleType TYPE_CHECKING Tensor adaptive_avg_pool1d "
            "adaptive_avg_pool2d adaptive_avg_pool3d adaptive_max_pool1d "
            "adaptive_max_pool1d_with_indices adaptive_max_pool2d "
            "adaptive_max_pool2d_with_indices adaptive_max_pool3d "
            "adaptive_max_pool3d_with_indices affine_grid alpha_dropout "
            "assert_int_or_pair avg_pool1d avg_pool2d avg_pool3d batch_norm "
            "bilinear binary_cross_entropy binary_cross_entropy_with_logits "
            "boolean_dispatch celu celu_ channel_shuffle conv1d conv2d conv3d "
            "conv_tbc conv_transpose1d conv_transpose2d conv_transpose3d "
            "cosine_embedding_loss cosine_similarity cross_entropy ctc_loss "
            "dataclasses dropout dropout1d dropout2d dropout3d elu elu_ embedding "
            "embedding_bag feature_alpha_dropout fold fractional_max_pool2d "
            "fractional_max_pool2d_with_indices fractional_max_pool3d "
            "fractional_max_pool3d_with_indices gaussian_nll_loss gelu glu grad "
            "grid_sample group_norm grouped_mm gumbel_softmax handle_torch_function "
            "hardshrink hardsigmoid hardswish hardtanh hardtanh_ has_torch_function "
            "has_torch_function_unary has_torch_function_variadic "
            "hinge_embedding_loss huber_loss importlib instance_norm interpolate "
            "kl_div l1_loss layer_norm leaky_relu leaky_relu_ linear "
            "linear_cross_entropy local_response_norm log_softmax logsigmoid "
            "lp_pool1d lp_pool2d lp_pool3d margin_ranking_loss math max_pool1d "
            "max_pool1d_with_indices max_pool2d max_pool2d_with_indices max_pool3d "
            "max_pool3d_with_indices max_unpool1d max_unpool2d max_unpool3d mish "
            "mse_loss multi_head_attention_forward multi_margin_loss "
            "multilabel_margin_loss multilabel_soft_margin_loss "
            "native_channel_shuffle nll_loss normalize np one_hot pad "
            "pairwise_distance pdist pixel_shuffle pixel_unshuffle poisson_nll_loss "
            "prelu relu relu6 relu_ reproducibility_notes rms_norm rrelu rrelu_ "
            "scaled_dot_product_attention scaled_grouped_mm scaled_mm selu selu_ "
            "sigmoid silu smooth_l1_loss soft_margin_loss softmax softmin softplus "
            "softshrink softsign sparse_support_notes tanh tanhshrink tf32_notes "
            "threshold threshold_ torch triplet_margin_loss "
            "triplet_margin_with_distance_loss unfold upsample upsample_bilinear "
            "upsample_nearest warnings "
        ).split()
    ),
    "torch.autograd": frozenset(
        (
            "DeviceType Function Mapping NestedIOFunction ProfilerActivity "
            "ProfilerConfig ProfilerEvent ProfilerState SavedTensor Sequence "
            "Variable anomaly_mode backward cast detect_anomaly enable_grad "
            "enforce_grad_layout_policy forward_ad function functional grad "
            "grad_mode gradcheck gradgradcheck graph handle_torch_function "
            "has_torch_function inference_mode is_multithreading_enabled "
            "is_tensor_like is_view_replay_enabled kineto_available no_grad "
            "overload profiler profiler_legacy profiler_util set_detect_anomaly "
            "set_grad_enabled set_multithreading_enabled torch variable warnings "
        ).split()
    ),
    "torch.autograd.functional": frozenset(
        ("fwAD hessian hvp jacobian jvp torch vhp vjp ").split()
    ),
    "torch.optim": frozenset(
        (
            "ASGD Adadelta Adafactor Adagrad Adam AdamW Adamax LBFGS Muon NAdam "
            "Optimizer RAdam RMSprop Rprop SGD SparseAdam lr_scheduler swa_utils "
            "swap_in_optimizer_params_and_state "
        ).split()
    ),
    "torch.linalg": frozenset(
        (
            "LinAlgError cholesky cholesky_ex common_notes cond cross det diagonal "
            "eig eigh eigvals eigvalsh householder_product inv inv_ex ldl_factor "
            "ldl_factor_ex ldl_solve lstsq lu lu_factor lu_factor_ex lu_solve "
            "matmul matrix_exp matrix_norm matrix_power matrix_rank multi_dot norm "
            "pinv qr slogdet solve solve_ex solve_triangular svd svdvals tensorinv "
            "tensorsolve vander vecdot vector_norm "
        ).split()
    ),
    "torch.func": frozenset(
        (
            "debug_unwrap functional_call functionalize grad grad_and_value hessian "
            "jacfwd jacrev jvp linearize rearrange replace_all_batch_norm_modules_ "
            "stack_module_state vjp vmap "
        ).split()
    ),
    "torch.nn.init": frozenset(
        (
            "Callable Literal ParamSpec Tensor TypeVar calculate_gain constant "
            "constant_ dirac dirac_ eye eye_ kaiming_normal kaiming_normal_ "
            "kaiming_uniform kaiming_uniform_ math normal normal_ ones_ orthogonal "
            "orthogonal_ sparse sparse_ torch trunc_normal_ uniform uniform_ "
            "warnings xavier_normal xavier_normal_ xavier_uniform xavier_uniform_ "
            "zeros_ "
        ).split()
    ),
    "torch.utils": frozenset(
        (
            "ThroughputBenchmark backcompat backend_registration checkpoint cmake_prefix_path "
            "collect_env copyreg cpp_backtrace data deterministic dlpack "
            "generate_methods_for_privateuse1_backend get_cpp_backtrace hooks "
            "rename_privateuse1_backend set_module swap_tensors throughput_benchmark torch weak "
            "weakref"
        ).split()
    ),
    "torch.utils.data": frozenset(
        (
            "BatchSampler ChainDataset ConcatDataset DFIterDataPipe DataChunk DataLoader Dataset "
            "DistributedSampler IterDataPipe IterableDataset MapDataPipe RandomSampler Sampler "
            "SequentialSampler StackDataset Subset SubsetRandomSampler TensorDataset "
            "WeightedRandomSampler argument_validation dataloader datapipes dataset "
            "default_collate default_convert distributed functional_datapipe get_worker_info "
            "graph graph_settings guaranteed_datapipes_determinism non_deterministic "
            "random_split runtime_validation runtime_validation_disabled sampler"
        ).split()
    ),
    "torch.nn.utils": frozenset(
        (
            "clip_grad clip_grad_norm clip_grad_norm_ clip_grad_value_ "
            "clip_grads_with_norm_ convert_conv2d_weight_memory_format "
            "convert_conv3d_weight_memory_format convert_parameters "
            "fuse_conv_bn_eval fuse_conv_bn_weights fuse_linear_bn_eval "
            "fuse_linear_bn_weights fusion get_total_norm init memory_format "
            "parameters_to_vector parametrizations parametrize remove_spectral_norm "
            "remove_weight_norm rnn skip_init spectral_norm stateless "
            "vector_to_parameters weight_norm "
        ).split()
    ),
    "torch.autograd.graph": frozenset(
        (
            "Any Callable Generator GradientEdge Iterable Iterator Literal "
            "MutableMapping NamedTuple Node Optional RemovableHandle Sequence "
            "TYPE_CHECKING TorchDispatchMode TypeAlias Union Variable "
            "WeakKeyDictionary WeakValueDictionary abc "
            "allow_mutation_on_saved_tensors cast contextlib contextvars "
            "defaultdict deque disable_saved_tensors_hooks functools "
            "get_gradient_edge increment_version log logging "
            "region_activation_memory_budget register_multi_grad_hook save_on_cpu "
            "saved_tensors_hooks set_override_stale_capture_stream "
            "set_warn_on_accumulate_grad_stream_mismatch threading torch "
        ).split()
    ),
    "torch.autograd.forward_ad": frozenset(
        (
            "Any NamedTuple UnpackedDualTensor dual_level enter_dual_level "
            "exit_dual_level make_dual os torch unpack_dual "
        ).split()
    ),
    "Tensor": frozenset(
        (
            "H T abs abs_ absolute absolute_ acos acos_ acosh acosh_ add add_ "
            "addbmm addbmm_ addcdiv addcdiv_ addcmul addcmul_ addmm addmm_ addmv "
            "addmv_ addr addr_ adjoint all allclose amax amin aminmax angle any "
            "apply_ arccos arccos_ arccosh arccosh_ arcsin arcsin_ arcsinh arcsinh_ "
            "arctan arctan2 arctan2_ arctan_ arctanh arctanh_ argmax argmin argsort "
            "argwhere as_strided as_strided_ as_strided_scatter as_subclass asin "
            "asin_ asinh asinh_ atan atan2 atan2_ atan_ atanh atanh_ backward "
            "baddbmm baddbmm_ bernoulli bernoulli_ bfloat16 bincount bitwise_and "
            "bitwise_and_ bitwise_left_shift bitwise_left_shift_ bitwise_not "
            "bitwise_not_ bitwise_or bitwise_or_ bitwise_right_shift "
            "bitwise_right_shift_ bitwise_xor bitwise_xor_ bmm bool broadcast_to "
            "byte cauchy_ ccol_indices cdouble ceil ceil_ cfloat chalf char "
            "cholesky cholesky_inverse cholesky_solve chunk clamp clamp_ clamp_max "
            "clamp_max_ clamp_min clamp_min_ clip clip_ clone coalesce col_indices "
            "conj conj_physical conj_physical_ const_data_ptr contiguous copy_ "
            "copysign copysign_ corrcoef cos cos_ cosh cosh_ count_nonzero cov cpu "
            "cross crow_indices cuda cummax cummin cumprod cumprod_ cumsum cumsum_ "
            "data data_ptr deg2rad deg2rad_ dense_dim dequantize det detach detach_ "
            "device diag diag_embed diagflat diagonal diagonal_scatter diff digamma "
            "digamma_ dim dim_order dist div div_ divide divide_ dot double dsplit "
            "dtype eig element_size eq eq_ equal erf erf_ erfc erfc_ erfinv erfinv_ "
            "exp exp2 exp2_ exp_ expand expand_as expm1 expm1_ exponential_ fill_ "
            "fill_diagonal_ fix fix_ flatten flip fliplr flipud float float_power "
            "float_power_ floor floor_ floor_divide floor_divide_ fmax fmin fmod "
            "fmod_ frac frac_ frexp gather gcd gcd_ ge ge_ geometric_ geqrf ger "
            "get_device grad grad_dtype grad_fn greater greater_ greater_equal "
            "greater_equal_ gt gt_ half hardshrink hash_tensor heaviside heaviside_ "
            "histc histogram hsplit hypot hypot_ i0 i0_ igamma igamma_ igammac "
            "igammac_ imag index index_add index_add_ index_copy index_copy_ "
            "index_fill index_fill_ index_put index_put_ index_reduce index_reduce_ "
            "index_select indices inner int int_repr inverse ipu is_coalesced "
            "is_complex is_conj is_contiguous is_cpu is_cuda is_distributed "
            "is_floating_point is_inference is_ipu is_leaf is_maia is_meta "
            "is_mkldnn is_mps is_mtia is_neg is_nested is_nonzero is_pinned "
            "is_quantized is_same_size is_set_to is_shared is_signed is_sparse "
            "is_sparse_csr is_vulkan is_xla is_xpu isclose isfinite isinf isnan "
            "isneginf isposinf isreal istft item itemsize kron kthvalue layout lcm "
            "lcm_ ldexp ldexp_ le le_ lerp lerp_ less less_ less_equal less_equal_ "
            "lgamma lgamma_ log log10 log10_ log1p log1p_ log2 log2_ log_ "
            "log_normal_ log_softmax logaddexp logaddexp2 logcumsumexp logdet "
            "logical_and logical_and_ logical_not logical_not_ logical_or "
            "logical_or_ logical_xor logical_xor_ logit logit_ logsumexp long lstsq "
            "lt lt_ lu lu_solve mH mT map2_ map_ masked_fill masked_fill_ "
            "masked_scatter masked_scatter_ masked_select matmul matrix_exp "
            "matrix_power max maximum mean median min minimum mm mode module_load "
            "moveaxis movedim msort mtia mul mul_ multinomial multiply multiply_ mv "
            "mvlgamma mvlgamma_ name nan_to_num nan_to_num_ nanmean nanmedian "
            "nanquantile nansum narrow narrow_copy nbytes ndim ndimension ne ne_ "
            "neg neg_ negative negative_ nelement new new_empty new_empty_strided "
            "new_full new_ones new_tensor new_zeros nextafter nextafter_ nonzero "
            "nonzero_static norm normal_ not_equal not_equal_ numel numpy orgqr "
            "ormqr outer output_nr permute pin_memory pinverse polygamma polygamma_ "
            "positive pow pow_ prelu prod put put_ q_per_channel_axis "
            "q_per_channel_scales q_per_channel_zero_points q_scale q_zero_point qr "
            "qscheme quantile rad2deg rad2deg_ random_ ravel real reciprocal "
            "reciprocal_ record_stream register_hook "
            "register_post_accumulate_grad_hook reinforce relu relu_ remainder "
            "remainder_ renorm renorm_ repeat repeat_interleave requires_grad "
            "requires_grad_ reshape reshape_as resize resize_ resize_as resize_as_ "
            "resize_as_sparse_ resolve_conj resolve_neg retain_grad retains_grad "
            "roll rot90 round round_ row_indices rsqrt rsqrt_ scatter scatter_ "
            "scatter_add scatter_add_ scatter_reduce scatter_reduce_ select "
            "select_scatter set_ sgn sgn_ shape share_memory_ short sigmoid "
            "sigmoid_ sign sign_ signbit sin sin_ sinc sinc_ sinh sinh_ size "
            "slice_inverse slice_scatter slogdet smm softmax solve sort sparse_dim "
            "sparse_mask sparse_resize_ sparse_resize_and_clear_ split "
            "split_with_sizes sqrt sqrt_ square square_ squeeze squeeze_ sspaddmm "
            "std stft storage storage_offset storage_type stride sub sub_ subtract "
            "subtract_ sum sum_to_size svd swapaxes swapaxes_ swapdims swapdims_ "
            "symeig t t_ take take_along_dim tan tan_ tanh tanh_ tensor_split tile "
            "to to_dense to_mkldnn to_padded_tensor to_sparse to_sparse_bsc "
            "to_sparse_bsr to_sparse_coo to_sparse_csc to_sparse_csr tolist topk "
            "trace transpose transpose_ triangular_solve tril tril_ triu triu_ "
            "true_divide true_divide_ trunc trunc_ type type_as unbind unflatten "
            "unfold uniform_ unique unique_consecutive unsafe_chunk unsafe_split "
            "unsafe_split_with_sizes unsqueeze unsqueeze_ untyped_storage values "
            "var vdot view view_as volatile vsplit where xlogy xlogy_ xpu zero_ "
        ).split()
    ),
}

_NO_CONV = (
    "adcli has 1-d and 2-d convolutions only: torch.nn.Conv1d, torch.nn.Conv2d, "
    "F.conv1d and F.conv2d"
)
_NO_POOL = (
    "adcli has 2-d max and average pooling only: torch.nn.MaxPool2d, torch.nn.AvgPool2d, "
    "F.max_pool2d and F.avg_pool2d"
)
_NO_NORM = (
    "this normalisation layer is not available in adcli: use torch.nn.LayerNorm, "
    "BatchNorm1d, BatchNorm2d, GroupNorm or InstanceNorm1d/2d, or normalise with mean() "
    "and var()"
)
_NO_FILES = "adcli scripts cannot read or write files"
_NO_DATA = (
    "adcli's torch.utils.data has Dataset (to derive from), TensorDataset, Subset, "
    "random_split and DataLoader (batch_size, shuffle, drop_last, collate_fn); no samplers, "
    "iterable datasets or worker processes"
)

#: What to use instead of a PyTorch name adcli lacks, by dotted name (a module's entry
#: covers everything inside it).
ALTERNATIVES: dict[str, str] = {
    "torch.save": _NO_FILES,
    "torch.load": _NO_FILES,
    "torch.utils": _NO_DATA,
    "torch.utils.data": _NO_DATA,
    "torch.jit": "TorchScript is not available in adcli: call the function or module directly",
    "torch.compile": "compilation is not available in adcli: call the function or module directly",
    "torch.distributions": "use torch.randn, torch.rand and torch.randint for random numbers",
    "torch.optim.lr_scheduler": "change optimizer.param_groups' learning rate by hand instead",
}
for _module, _names, _hint in (
    ("torch.nn", "Conv3d ConvTranspose1d ConvTranspose2d ConvTranspose3d", _NO_CONV),
    ("torch.nn.functional", "conv3d conv_transpose1d conv_transpose2d", _NO_CONV),
    ("torch", "conv3d", _NO_CONV),
    ("torch.nn", "MaxPool1d MaxPool3d AvgPool1d AdaptiveAvgPool2d", _NO_POOL),
    ("torch.nn.functional", "max_pool1d avg_pool1d", _NO_POOL),
    ("torch.nn", "BatchNorm3d InstanceNorm3d LocalResponseNorm RMSNorm", _NO_NORM),
    ("torch.nn.functional", "local_response_norm rms_norm", _NO_NORM),
):
    ALTERNATIVES.update({f"{_module}.{n}": _hint for n in _names.split()})


@functools.cache
def library() -> Library:
    """PyTorch as the language's error messages know it (loaded at the first such error)."""
    modules = {k: v for k, v in PYTORCH_NAMES.items() if k != "Tensor"}
    return Library(modules, {Tensor: PYTORCH_NAMES["Tensor"]}, ALTERNATIVES)
