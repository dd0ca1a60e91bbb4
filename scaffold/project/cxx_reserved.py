"""Names the C/C++ headers of the generated code define at global scope (generated).

Macros, namespaces, functions, variables and types that the headers the template's C++
files include declare outside any namespace, as the compiler reports them: an op's
``namespace <op>`` would collide with each. Regenerated and compared by
tests/test_op_names.py (tests/cxx_names.py derives it); do not edit by hand.
"""

CXX_RESERVED = frozenset(
    """
a64l abort abs access acct acos acosf acosf128 acosf32 acosf32x acosf64 acosf64x acosh acoshf
acoshf128 acoshf32 acoshf32x acoshf64 acoshf64x acoshl acosl adjtime alarm aligned_alloc all
alloca any arc4random arc4random_buf arc4random_uniform asctime asctime_r asin asinf asinf128
asinf32 asinf32x asinf64 asinf64x asinh asinhf asinhf128 asinhf32 asinhf32x asinhf64 asinhf64x
asinhl asinl asprintf assert assert_perror at at_quick_exit atan atan2 atan2f atan2f128
atan2f32 atan2f32x atan2f64 atan2f64x atan2l atanf atanf128 atanf32 atanf32x atanf64 atanf64x
atanh atanhf atanhf128 atanhf32 atanhf32x atanhf64 atanhf64x atanhl atanl atexit atof atoi atol
atoll ballot basename bcmp bcopy be16toh be32toh be64toh bind_textdomain_codeset bindtextdomain
blas blkcnt64_t blkcnt_t blksize_t brk bsearch btowc bzero c10 c10_complex_math caddr_t caffe2
calloc canonicalize canonicalize_file_name canonicalizef canonicalizef128 canonicalizef32
canonicalizef32x canonicalizef64 canonicalizef64x canonicalizel cbrt cbrtf cbrtf128 cbrtf32
cbrtf32x cbrtf64 cbrtf64x cbrtl ceil ceilf ceilf128 ceilf32 ceilf32x ceilf64 ceilf64x ceill
char1 char2 char3 char4 chdir chown chroot cl_context_flags cl_context_flags_enum
cl_event_flags cl_event_flags_enum clearenv clearerr clearerr_unlocked clock clock64
clock_adjtime clock_getcpuclockid clock_getres clock_gettime clock_nanosleep clock_settime
clock_t clockid_t clone close close_range closefrom comparison_fn_t complex_literals confstr
cookie_close_function_t cookie_io_functions_t cookie_read_function_t cookie_seek_function_t
cookie_write_function_t copy_file_range copysign copysignf copysignf128 copysignf32
copysignf32x copysignf64 copysignf64x copysignl cos cosf cosf128 cosf32 cosf32x cosf64 cosf64x
cosh coshf coshf128 coshf32 coshf32x coshf64 coshf64x coshl cosl cospi cospif cpu_set_t crypt
ctermid ctime ctime_r cub cuda cuserid cuuint32_t cuuint64_t cyl_bessel_i0 cyl_bessel_i0f
cyl_bessel_i1 cyl_bessel_i1f dadd daddl daddr_t daemon daylight dcgettext dcngettext ddivl
detail detail_ dev_t dfmal dgettext difftime dim3 div div_t dmul dmull dngettext double1
double2 double2int double2ll double2uint double2ull double3 double4 double4_16a double4_32a
double_t dprintf drand48 drand48_data drand48_r drem dremf dreml dsqrtl dsub dsubl dup dup2
dup3 duplocale dysize eaccess ecvt ecvt_r endusershell enforce_detail environ erand48 erand48_r
erf erfc erfcf erfcf128 erfcf32 erfcf32x erfcf64 erfcf64x erfcinv erfcinvf erfcl erfcx erfcxf
erff erff128 erff32 erff32x erff64 erff64x erfinv erfinvf erfl errno error_t euidaccess execl
execle execlp execv execve execveat execvp execvpe exit exp exp10 exp10f exp10f128 exp10f32
exp10f32x exp10f64 exp10f64x exp10l exp2 exp2f exp2f128 exp2f32 exp2f32x exp2f64 exp2f64x exp2l
expf expf128 expf32 expf32x expf64 expf64x expl explicit_bzero expm1 expm1f expm1f128 expm1f32
expm1f32x expm1f64 expm1f64x expm1l f32addf128 f32addf32x f32addf64 f32addf64x f32divf128
f32divf32x f32divf64 f32divf64x f32fmaf128 f32fmaf32x f32fmaf64 f32fmaf64x f32mulf128
f32mulf32x f32mulf64 f32mulf64x f32sqrtf128 f32sqrtf32x f32sqrtf64 f32sqrtf64x f32subf128
f32subf32x f32subf64 f32subf64x f32xaddf128 f32xaddf64 f32xaddf64x f32xdivf128 f32xdivf64
f32xdivf64x f32xfmaf128 f32xfmaf64 f32xfmaf64x f32xmulf128 f32xmulf64 f32xmulf64x f32xsqrtf128
f32xsqrtf64 f32xsqrtf64x f32xsubf128 f32xsubf64 f32xsubf64x f64addf128 f64addf64x f64divf128
f64divf64x f64fmaf128 f64fmaf64x f64mulf128 f64mulf64x f64sqrtf128 f64sqrtf64x f64subf128
f64subf64x f64xaddf128 f64xdivf128 f64xfmaf128 f64xmulf128 f64xsqrtf128 f64xsubf128 fabs fabsf
fabsf128 fabsf32 fabsf32x fabsf64 fabsf64x fabsl faccessat fadd faddl fchdir fchown fchownat
fclose fcloseall fcvt fcvt_r fd_mask fd_set fdatasync fdim fdimf fdimf128 fdimf32 fdimf32x
fdimf64 fdimf64x fdiml fdiv fdivide fdividef fdivl fdopen feof feof_unlocked ferror
ferror_unlocked fexecve fflush fflush_unlocked ffma ffmal ffs ffsl ffsll fgetc fgetc_unlocked
fgetpos fgetpos64 fgets fgets_unlocked fgetwc fgetwc_unlocked fgetws fgetws_unlocked fileno
fileno_unlocked finite finitef finitel float1 float2 float2double float3 float4 float_t
flockfile floor floorf floorf128 floorf32 floorf32x floorf64 floorf64x floorl fma fmaf fmaf128
fmaf32 fmaf32x fmaf64 fmaf64x fmal fmax fmaxf fmaxf128 fmaxf32 fmaxf32x fmaxf64 fmaxf64x
fmaximum fmaximum_mag fmaximum_mag_num fmaximum_mag_numf fmaximum_mag_numf128
fmaximum_mag_numf32 fmaximum_mag_numf32x fmaximum_mag_numf64 fmaximum_mag_numf64x
fmaximum_mag_numl fmaximum_magf fmaximum_magf128 fmaximum_magf32 fmaximum_magf32x
fmaximum_magf64 fmaximum_magf64x fmaximum_magl fmaximum_num fmaximum_numf fmaximum_numf128
fmaximum_numf32 fmaximum_numf32x fmaximum_numf64 fmaximum_numf64x fmaximum_numl fmaximumf
fmaximumf128 fmaximumf32 fmaximumf32x fmaximumf64 fmaximumf64x fmaximuml fmaxl fmaxmag fmaxmagf
fmaxmagf128 fmaxmagf32 fmaxmagf32x fmaxmagf64 fmaxmagf64x fmaxmagl fmemopen fmin fminf fminf128
fminf32 fminf32x fminf64 fminf64x fminimum fminimum_mag fminimum_mag_num fminimum_mag_numf
fminimum_mag_numf128 fminimum_mag_numf32 fminimum_mag_numf32x fminimum_mag_numf64
fminimum_mag_numf64x fminimum_mag_numl fminimum_magf fminimum_magf128 fminimum_magf32
fminimum_magf32x fminimum_magf64 fminimum_magf64x fminimum_magl fminimum_num fminimum_numf
fminimum_numf128 fminimum_numf32 fminimum_numf32x fminimum_numf64 fminimum_numf64x
fminimum_numl fminimumf fminimumf128 fminimumf32 fminimumf32x fminimumf64 fminimumf64x
fminimuml fminl fminmag fminmagf fminmagf128 fminmagf32 fminmagf32x fminmagf64 fminmagf64x
fminmagl fmod fmodf fmodf128 fmodf32 fmodf32x fmodf64 fmodf64x fmodl fmul fmull fopen fopen64
fopencookie fork fpathconf fpclassify fpos64_t fpos_t fprintf fputc fputc_unlocked fputs
fputs_unlocked fputwc fputwc_unlocked fputws fputws_unlocked fread fread_unlocked free
freelocale freopen freopen64 frexp frexpf frexpf128 frexpf32 frexpf32x frexpf64 frexpf64x
frexpl fromfp fromfpf fromfpf128 fromfpf32 fromfpf32x fromfpf64 fromfpf64x fromfpl fromfpx
fromfpxf fromfpxf128 fromfpxf32 fromfpxf32x fromfpxf64 fromfpxf64x fromfpxl fsblkcnt64_t
fsblkcnt_t fscanf fseek fseeko fseeko64 fsetpos fsetpos64 fsfilcnt64_t fsfilcnt_t fsid_t fsqrt
fsqrtl fsub fsubl fsync ftell ftello ftello64 ftruncate ftruncate64 ftrylockfile funlockfile
futimes futimesat fwide fwprintf fwrite fwrite_unlocked fwscanf gamma gammaf gammal gcvt
get_current_dir_name getc getc_unlocked getchar getchar_unlocked getcpu getcwd getdate
getdate_err getdate_r getdelim getdomainname getdtablesize getegid getentropy getenv geteuid
getgid getgroups gethostid gethostname getitimer getline getloadavg getlogin getlogin_r getopt
getpagesize getpass getpayload getpayloadf getpayloadf128 getpayloadf32 getpayloadf32x
getpayloadf64 getpayloadf64x getpayloadl getpgid getpgrp getpid getppid getpt getresgid
getresuid getsid getsubopt gettext gettid gettimeofday getuid getusershell getw getwc
getwc_unlocked getwchar getwchar_unlocked getwd gid_t gmtime gmtime_r grantpt group_member guts
h2ceil h2cos h2exp h2exp10 h2exp2 h2floor h2log h2log10 h2log2 h2rcp h2rint h2rsqrt h2sin
h2sqrt h2tanh h2tanh_approx h2trunc half half2 hceil hcos hexp hexp10 hexp2 hfloor hlog hlog10
hlog2 hrcp hrint hrsqrt hsin hsqrt htanh htanh_approx htobe16 htobe32 htobe64 htole16 htole32
htole64 htrunc hypot hypotf hypotf128 hypotf32 hypotf32x hypotf64 hypotf64x hypotl id_t ilogb
ilogbf ilogbf128 ilogbf32 ilogbf32x ilogbf64 ilogbf64x ilogbl index indexing initstate
initstate_r ino64_t ino_t int1 int16_t int2 int2double int3 int32_t int4 int64_t int8_t
int_fast16_t int_fast32_t int_fast64_t int_fast8_t int_least16_t int_least32_t int_least64_t
int_least8_t internal intmax_t intptr_t isalnum isalnum_l isalpha isalpha_l isascii isascii_l
isatty isblank isblank_l iscanonical iscntrl iscntrl_l isctype isdigit isdigit_l iseqsig
isfinite isgraph isgraph_l isgreater isgreaterequal isinf isinff isinfl isless islessequal
islessgreater islower islower_l isnan isnanf isnanl isnormal isprint isprint_l ispunct
ispunct_l issignaling isspace isspace_l issubnormal isunordered isupper isupper_l iswalnum
iswalnum_l iswalpha iswalpha_l iswblank iswblank_l iswcntrl iswcntrl_l iswctype iswctype_l
iswdigit iswdigit_l iswgraph iswgraph_l iswlower iswlower_l iswprint iswprint_l iswpunct
iswpunct_l iswspace iswspace_l iswupper iswupper_l iswxdigit iswxdigit_l isxdigit isxdigit_l
iszero itimerspec itimerval ivalue j0 j0f j0f128 j0f32 j0f32x j0f64 j0f64x j0l j1 j1f j1f128
j1f32 j1f32x j1f64 j1f64x j1l jn jnf jnf128 jnf32 jnf32x jnf64 jnf64x jnl jrand48 jrand48_r
key_t l64a labs lchown lcong48 lcong48_r lconv ldexp ldexpf ldexpf128 ldexpf32 ldexpf32x
ldexpf64 ldexpf64x ldexpl ldiv ldiv_t le16toh le32toh le64toh lerp lgamma lgamma_r lgammaf
lgammaf128 lgammaf128_r lgammaf32 lgammaf32_r lgammaf32x lgammaf32x_r lgammaf64 lgammaf64_r
lgammaf64x lgammaf64x_r lgammaf_r lgammal lgammal_r link linkat ll2double llabs lldiv lldiv_t
llmax llmin llogb llogbf llogbf128 llogbf32 llogbf32x llogbf64 llogbf64x llogbl llrint llrintf
llrintf128 llrintf32 llrintf32x llrintf64 llrintf64x llrintl llround llroundf llroundf128
llroundf32 llroundf32x llroundf64 llroundf64x llroundl locale_t localeconv localtime
localtime_r lockf lockf64 loff_t log log10 log10f log10f128 log10f32 log10f32x log10f64
log10f64x log10l log1p log1pf log1pf128 log1pf32 log1pf32x log1pf64 log1pf64x log1pl log2 log2f
log2f128 log2f32 log2f32x log2f64 log2f64x log2l logb logbf logbf128 logbf32 logbf32x logbf64
logbf64x logbl logf logf128 logf32 logf32x logf64 logf64x logl long1 long2 long3 long4
long4_16a long4_32a longlong1 longlong2 longlong3 longlong4 longlong4_16a longlong4_32a lrand48
lrand48_r lrint lrintf lrintf128 lrintf32 lrintf32x lrintf64 lrintf64x lrintl lround lroundf
lroundf128 lroundf32 lroundf32x lroundf64 lroundf64x lroundl lseek lseek64 lutimes
make_bfloat162 make_char1 make_char2 make_char3 make_char4 make_double1 make_double2
make_double3 make_double4 make_double4_16a make_double4_32a make_float1 make_float2 make_float3
make_float4 make_half2 make_int1 make_int2 make_int3 make_int4 make_long1 make_long2 make_long3
make_long4 make_long4_16a make_long4_32a make_longlong1 make_longlong2 make_longlong3
make_longlong4 make_longlong4_16a make_longlong4_32a make_short1 make_short2 make_short3
make_short4 make_uchar1 make_uchar2 make_uchar3 make_uchar4 make_uint1 make_uint2 make_uint3
make_uint4 make_ulong1 make_ulong2 make_ulong3 make_ulong4 make_ulong4_16a make_ulong4_32a
make_ulonglong1 make_ulonglong2 make_ulonglong3 make_ulonglong4 make_ulonglong4_16a
make_ulonglong4_32a make_ushort1 make_ushort2 make_ushort3 make_ushort4 malloc math_errhandling
max max_align_t mblen mbrlen mbrtowc mbsinit mbsnrtowcs mbsrtowcs mbstate_t mbstowcs mbtowc
memccpy memchr memcmp memcpy memfrob memmem memmove mempcpy memrchr memset meta min mkdtemp
mkostemp mkostemp64 mkostemps mkostemps64 mkstemp mkstemp64 mkstemps mkstemps64 mktemp mktime
mode_t modf modff modff128 modff32 modff32x modff64 modff64x modfl mrand48 mrand48_r nan nanf
nanf128 nanf32 nanf32x nanf64 nanf64x nanl nanosleep native nearbyint nearbyintf nearbyintf128
nearbyintf32 nearbyintf32x nearbyintf64 nearbyintf64x nearbyintl newlocale nextafter nextafterf
nextafterf128 nextafterf32 nextafterf32x nextafterf64 nextafterf64x nextafterl nextdown
nextdownf nextdownf128 nextdownf32 nextdownf32x nextdownf64 nextdownf64x nextdownl nexttoward
nexttowardf nexttowardl nextup nextupf nextupf128 nextupf32 nextupf32x nextupf64 nextupf64x
nextupl ngettext nice nlink_t norm norm3d norm3df norm4d norm4df normcdf normcdff normcdfinv
normcdfinvf normf nrand48 nrand48_r nullptr_t nv nv_bfloat16 nv_bfloat162 nv_half nv_half2
obstack obstack_printf obstack_vprintf off64_t off_t offsetof on_exit open_memstream
open_wmemstream optarg opterr optind optopt pathconf pause pclose perror pid_t pipe pipe2 popen
posix_memalign posix_openpt pow powf powf128 powf32 powf32x powf64 powf64x powl pread pread64
printf profil program_invocation_name program_invocation_short_name pselect pthread_atfork
pthread_attr_destroy pthread_attr_getaffinity_np pthread_attr_getdetachstate
pthread_attr_getguardsize pthread_attr_getinheritsched pthread_attr_getschedparam
pthread_attr_getschedpolicy pthread_attr_getscope pthread_attr_getsigmask_np
pthread_attr_getstack pthread_attr_getstackaddr pthread_attr_getstacksize pthread_attr_init
pthread_attr_setaffinity_np pthread_attr_setdetachstate pthread_attr_setguardsize
pthread_attr_setinheritsched pthread_attr_setschedparam pthread_attr_setschedpolicy
pthread_attr_setscope pthread_attr_setsigmask_np pthread_attr_setstack
pthread_attr_setstackaddr pthread_attr_setstacksize pthread_attr_t pthread_barrier_destroy
pthread_barrier_init pthread_barrier_t pthread_barrier_wait pthread_barrierattr_destroy
pthread_barrierattr_getpshared pthread_barrierattr_init pthread_barrierattr_setpshared
pthread_barrierattr_t pthread_cancel pthread_cleanup_pop pthread_cleanup_pop_restore_np
pthread_cleanup_push pthread_cleanup_push_defer_np pthread_clockjoin_np pthread_cond_broadcast
pthread_cond_clockwait pthread_cond_destroy pthread_cond_init pthread_cond_signal
pthread_cond_t pthread_cond_timedwait pthread_cond_wait pthread_condattr_destroy
pthread_condattr_getclock pthread_condattr_getpshared pthread_condattr_init
pthread_condattr_setclock pthread_condattr_setpshared pthread_condattr_t pthread_create
pthread_detach pthread_equal pthread_exit pthread_getaffinity_np pthread_getattr_default_np
pthread_getattr_np pthread_getconcurrency pthread_getcpuclockid pthread_getname_np
pthread_getschedparam pthread_getspecific pthread_join pthread_key_create pthread_key_delete
pthread_key_t pthread_mutex_clocklock pthread_mutex_consistent pthread_mutex_consistent_np
pthread_mutex_destroy pthread_mutex_getprioceiling pthread_mutex_init pthread_mutex_lock
pthread_mutex_setprioceiling pthread_mutex_t pthread_mutex_timedlock pthread_mutex_trylock
pthread_mutex_unlock pthread_mutexattr_destroy pthread_mutexattr_getprioceiling
pthread_mutexattr_getprotocol pthread_mutexattr_getpshared pthread_mutexattr_getrobust
pthread_mutexattr_getrobust_np pthread_mutexattr_gettype pthread_mutexattr_init
pthread_mutexattr_setprioceiling pthread_mutexattr_setprotocol pthread_mutexattr_setpshared
pthread_mutexattr_setrobust pthread_mutexattr_setrobust_np pthread_mutexattr_settype
pthread_mutexattr_t pthread_once pthread_once_t pthread_rwlock_clockrdlock
pthread_rwlock_clockwrlock pthread_rwlock_destroy pthread_rwlock_init pthread_rwlock_rdlock
pthread_rwlock_t pthread_rwlock_timedrdlock pthread_rwlock_timedwrlock pthread_rwlock_tryrdlock
pthread_rwlock_trywrlock pthread_rwlock_unlock pthread_rwlock_wrlock pthread_rwlockattr_destroy
pthread_rwlockattr_getkind_np pthread_rwlockattr_getpshared pthread_rwlockattr_init
pthread_rwlockattr_setkind_np pthread_rwlockattr_setpshared pthread_rwlockattr_t pthread_self
pthread_setaffinity_np pthread_setattr_default_np pthread_setcancelstate pthread_setcanceltype
pthread_setconcurrency pthread_setname_np pthread_setschedparam pthread_setschedprio
pthread_setspecific pthread_spin_destroy pthread_spin_init pthread_spin_lock
pthread_spin_trylock pthread_spin_unlock pthread_spinlock_t pthread_t pthread_testcancel
pthread_timedjoin_np pthread_tryjoin_np pthread_yield ptrdiff_t ptsname ptsname_r ptx putc
putc_unlocked putchar putchar_unlocked putenv puts putw putwc putwc_unlocked putwchar
putwchar_unlocked pwrite pwrite64 pybind11 qecvt qecvt_r qfcvt qfcvt_r qgcvt qsort qsort_r
quad_t quick_exit rand rand_r random random_data random_r raw rawmemchr rcbrt rcbrtf read
readlink readlinkat realloc reallocarray realpath register_t remainder remainderf remainderf128
remainderf32 remainderf32x remainderf64 remainderf64x remainderl remove remquo remquof
remquof128 remquof32 remquof32x remquof64 remquof64x remquol rename renameat renameat2 revoke
rewind rhypot rhypotf rindex rint rintf rintf128 rintf32 rintf32x rintf64 rintf64x rintl rmdir
rnorm rnorm3d rnorm3df rnorm4d rnorm4df rnormf round roundeven roundevenf roundevenf128
roundevenf32 roundevenf32x roundevenf64 roundevenf64x roundevenl roundf roundf128 roundf32
roundf32x roundf64 roundf64x roundl rpmatch rsqrt rsqrtf sbrk scalb scalbf scalbl scalbln
scalblnf scalblnf128 scalblnf32 scalblnf32x scalblnf64 scalblnf64x scalblnl scalbn scalbnf
scalbnf128 scalbnf32 scalbnf32x scalbnf64 scalbnf64x scalbnl scanf sched_get_priority_max
sched_get_priority_min sched_getaffinity sched_getcpu sched_getparam sched_getscheduler
sched_param sched_priority sched_rr_get_interval sched_setaffinity sched_setparam
sched_setscheduler sched_yield secure_getenv seed48 seed48_r select sem_clockwait sem_close
sem_destroy sem_getvalue sem_init sem_open sem_post sem_t sem_timedwait sem_trywait sem_unlink
sem_wait setbuf setbuffer setdomainname setegid setenv seteuid setgid sethostid sethostname
setitimer setlinebuf setlocale setlogin setns setpayload setpayloadf setpayloadf128
setpayloadf32 setpayloadf32x setpayloadf64 setpayloadf64x setpayloadl setpayloadsig
setpayloadsigf setpayloadsigf128 setpayloadsigf32 setpayloadsigf32x setpayloadsigf64
setpayloadsigf64x setpayloadsigl setpgid setpgrp setregid setresgid setresuid setreuid setsid
setstate setstate_r settimeofday setuid setusershell setvbuf short1 short2 short3 short4
sigabbrev_np sigdescr_np sigevent signbit signgam significand significandf significandl
sigset_t sin sincos sincosf sincosf128 sincosf32 sincosf32x sincosf64 sincosf64x sincosl
sincospi sincospif sinf sinf128 sinf32 sinf32x sinf64 sinf64x sinh sinhf sinhf128 sinhf32
sinhf32x sinhf64 sinhf64x sinhl sinl sinpi sinpif size_t ska ska_ordered sleep snprintf
socklen_t sprintf sqrt sqrtf sqrtf128 sqrtf32 sqrtf32x sqrtf64 sqrtf64x sqrtl srand srand48
srand48_r srandom srandom_r sscanf ssize_t std stderr stdin stdout stpcpy stpncpy strcasecmp
strcasecmp_l strcasestr strcat strchr strchrnul strcmp strcoll strcoll_l strcpy strcspn strdup
strdupa strerror strerror_l strerror_r strerrordesc_np strerrorname_np strfromd strfromf
strfromf128 strfromf32 strfromf32x strfromf64 strfromf64x strfroml strfry strftime strftime_l
string_literals string_view_literals strlen strncasecmp strncasecmp_l strncat strncmp strncpy
strndup strndupa strnlen strpbrk strptime strptime_l strrchr strsep strsignal strspn strstr
strtod strtod_l strtof strtof128 strtof128_l strtof32 strtof32_l strtof32x strtof32x_l strtof64
strtof64_l strtof64x strtof64x_l strtof_l strtok strtok_r strtol strtol_l strtold strtold_l
strtoll strtoll_l strtoq strtoul strtoul_l strtoull strtoull_l strtouq strverscmp strxfrm
strxfrm_l suseconds_t swab swprintf swscanf symint symlink symlinkat sync syncfs
syncthreads_and syncthreads_count syncthreads_or syscall sysconf system tan tanf tanf128 tanf32
tanf32x tanf64 tanf64x tanh tanhf tanhf128 tanhf32 tanhf32x tanhf64 tanhf64x tanhl tanl target
tcgetpgrp tcsetpgrp tempnam textdomain tgamma tgammaf tgammaf128 tgammaf32 tgammaf32x tgammaf64
tgammaf64x tgammal this_thread thrust time time_t timegm timelocal timer_create timer_delete
timer_getoverrun timer_gettime timer_settime timer_t timeradd timerclear timercmp timerisset
timersub timespec timespec_get timespec_getres timeval timex timezone tm tmpfile tmpfile64
tmpnam tmpnam_r toascii toascii_l tolower tolower_l torch totalorder totalorderf totalorderf128
totalorderf32 totalorderf32x totalorderf64 totalorderf64x totalorderl totalordermag
totalordermagf totalordermagf128 totalordermagf32 totalordermagf32x totalordermagf64
totalordermagf64x totalordermagl toupper toupper_l towctrans towctrans_l towlower towlower_l
towupper towupper_l trunc truncate truncate64 truncf truncf128 truncf32 truncf32x truncf64
truncf64x truncl ttyname ttyname_r ttyslot typelist tzname tzset u_char u_int u_int16_t
u_int32_t u_int64_t u_int8_t u_long u_quad_t u_short ualarm uchar1 uchar2 uchar3 uchar4 ufromfp
ufromfpf ufromfpf128 ufromfpf32 ufromfpf32x ufromfpf64 ufromfpf64x ufromfpl ufromfpx ufromfpxf
ufromfpxf128 ufromfpxf32 ufromfpxf32x ufromfpxf64 ufromfpxf64x ufromfpxl uid_t uint uint1
uint16_t uint2 uint2double uint3 uint32_t uint4 uint64_t uint8_t uint_fast16_t uint_fast32_t
uint_fast64_t uint_fast8_t uint_least16_t uint_least32_t uint_least64_t uint_least8_t uintmax_t
uintptr_t ull2double ullmax ullmin ulong ulong1 ulong2 ulong3 ulong4 ulong4_16a ulong4_32a
ulonglong1 ulonglong2 ulonglong3 ulonglong4 ulonglong4_16a ulonglong4_32a umax umin ungetc
ungetwc unlink unlinkat unlockpt unsetenv unshare useconds_t uselocale ushort ushort1 ushort2
ushort3 ushort4 usleep utimes va_list valloc vasprintf vdprintf vfork vfprintf vfscanf
vfwprintf vfwscanf vhangup views vprintf vscanf vsnprintf vsprintf vsscanf vswprintf vswscanf
vwprintf vwscanf wcpcpy wcpncpy wcrtomb wcscasecmp wcscasecmp_l wcscat wcschr wcschrnul wcscmp
wcscoll wcscoll_l wcscpy wcscspn wcsdup wcsftime wcsftime_l wcslen wcsncasecmp wcsncasecmp_l
wcsncat wcsncmp wcsncpy wcsnlen wcsnrtombs wcspbrk wcsrchr wcsrtombs wcsspn wcsstr wcstod
wcstod_l wcstof wcstof128 wcstof128_l wcstof32 wcstof32_l wcstof32x wcstof32x_l wcstof64
wcstof64_l wcstof64x wcstof64x_l wcstof_l wcstok wcstol wcstol_l wcstold wcstold_l wcstoll
wcstoll_l wcstombs wcstoq wcstoul wcstoul_l wcstoull wcstoull_l wcstouq wcswcs wcswidth wcsxfrm
wcsxfrm_l wctob wctomb wctrans wctrans_l wctrans_t wctype wctype_l wctype_t wcwidth wint_t
wmemchr wmemcmp wmemcpy wmemmove wmempcpy wmemset wprintf write wscanf y0 y0f y0f128 y0f32
y0f32x y0f64 y0f64x y0l y1 y1f y1f128 y1f32 y1f32x y1f64 y1f64x y1l yn ynf ynf128 ynf32 ynf32x
ynf64 ynf64x ynl
""".split()  # noqa: SIM905
)
